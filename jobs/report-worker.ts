import { randomBytes } from "node:crypto";
import { DelayedError, type Job, Worker } from "bullmq";
import type { FileConfig } from "../src/config/file-schema.ts";
import { describeError } from "../src/errors.ts";
import { principalsMention } from "../src/grammar/slack-ids.ts";
import { keepRenewed } from "../src/keep-renewed.ts";
import { holdingLock, stepJobLockOptions } from "../src/queue/job-lock.ts";
import { REPORT_JOBS, REPORT_QUEUE, type ReportQueue } from "../src/queue/report-queue.ts";
import { WORKER_METRICS } from "../src/queue/worker-metrics.ts";
import type { WorkerWatch } from "../src/queue/worker-watch.ts";
import type { RedisClient } from "../src/redis/redis-client.ts";
import type { ReporterDeps } from "../src/reporter/report-context.ts";
import { type ReportResult, reportSwap } from "../src/reporter/swap-reporter.ts";
import { QUEUE_PREFIX } from "../src/store/keys.ts";

export interface ReportWorkerDeps extends Omit<ReporterDeps, "cardUpdateSeconds" | "approvers"> {
  queue: ReportQueue;
  /** The card pace and the approvers, read again for each look (the config may be reloaded). */
  settings: () => Pick<ReporterDeps, "cardUpdateSeconds" | "approvers">;
  /** The per-swap reporter lock (reportLockMs): how long a reporter that died holds back the next one. */
  lockMs?: number;
}

/** The reporter's settings in `file`: its card pace and who may approve (the plan's first line names them). */
export function reporterSettings(file: FileConfig): Pick<ReporterDeps, "cardUpdateSeconds" | "approvers"> {
  return {
    cardUpdateSeconds: file.swaps.cardUpdateSeconds,
    approvers: principalsMention(file.approvers.users, file.approvers.groups),
  };
}

const MAX_REPORT_LOCK_MS = 15_000;

/**
 * One reporter per swap at a time: a lock renewed every third of it while the reporter waits on Slack (a
 * Retry-After), and short, so a reporter that died holds back the next one for at most 15 s, or for as
 * long as a dead worker holds back its swap's step (swaps.lockSeconds) when that is shorter: the thread
 * of a swap taken over after a crash goes on when the step does, not up to 10 s after it.
 */
export function reportLockMs(file: FileConfig): number {
  return Math.min(MAX_REPORT_LOCK_MS, file.swaps.lockSeconds * 1000);
}
/**
 * Swaps reported at once by one process. A running swap's reporter no longer waits at a busy channel (its
 * progress is folded and its card edit waits its next look) and looks someone waits for go first (an
 * ended swap, a decision, a new card: ReportQueue), so slots are held mostly by posts that must go.
 * At 32, the bench's 25 swaps in one channel were all approved within 63 s instead of about 150 s and the
 * median outcome reached its card 37 s after its swap ended instead of about 45 s; but in one run of two
 * a reaction's delivery was not acknowledged within Slack's 3 s (as at 64 before), while the bot's event
 * loop never stalled for a second (EVENT_LOOP_STALLED) and the bench's own process stalled up to 0.7 s:
 * not understood yet, so 8 stays (docs/benchmarks.md, "concurrent").
 */
export const REPORT_CONCURRENCY = 8;

/** A report job's queue lock (BullMQ's default), renewed by the run: a run may wait long at a busy channel. */
const JOB_LOCK_MS = 30_000;

/** How often a sweep looks for swaps the reporter has not caught up with. */
export const SWEEP_EVERY_MS = 30_000;

/**
 * The reporter's worker: each job brings one swap's card and thread up to date (src/reporter/). Runs in
 * every worker process; a per-swap lock keeps two reporters off one swap, and the queue's retry and card
 * jobs bring it back when Slack refused or the card's next edit is due. Nothing here ever touches a swap.
 */
export function createReportWorker(
  connection: RedisClient,
  deps: ReportWorkerDeps,
  watch: WorkerWatch,
  concurrency = REPORT_CONCURRENCY,
): Worker {
  const worker = new Worker(
    REPORT_QUEUE,
    watch.inFlight.track(
      REPORT_QUEUE,
      async (job: Job<{ swapId?: string; ended?: boolean }>, token?: string) => {
        if (job.name === REPORT_JOBS.sweep) {
          for (const swapId of await deps.store.reports.pending(SWEEP_EVERY_MS / 3))
            await deps.queue.soon(swapId);
          return;
        }
        const swapId = job.data.swapId;
        if (swapId === undefined) return;
        const lockToken = randomBytes(8).toString("hex");
        const lockMs = deps.lockMs ?? MAX_REPORT_LOCK_MS;
        if (!(await deps.store.reports.lock(swapId, lockToken, lockMs))) {
          // Another reporter is on this swap: look again right after it (it may not have seen what this job is
          // for). When the swap has ended, that reporter's calls (if it is this process's) stop waiting behind
          // other swaps' urgent ones: its run began before the end, and the outcome waits for it.
          if (job.name === REPORT_JOBS.report && job.data.ended === true) deps.poster.hurry(swapId);
          await job.moveToDelayed(Date.now() + 250, token);
          throw new DelayedError();
        }
        const stopRenewing = keepRenewed(
          () => deps.store.reports.renewLock(swapId, lockToken, lockMs),
          lockMs / 3,
        );
        let result: ReportResult;
        try {
          if (job.name === REPORT_JOBS.report || job.name === REPORT_JOBS.turn) {
            // Slack refused lately: the one retry job looks at its time; looks in between would only hammer Slack
            const { retryAt } = await deps.store.reports.get(swapId);
            if (retryAt !== undefined && retryAt > Date.now()) return;
          }
          // how long the look waited for a free reporter (a delayed job's own delay is not counted)
          const queuedMs = job.name === REPORT_JOBS.report ? Date.now() - job.timestamp : undefined;
          result = await holdingLock(job, token, JOB_LOCK_MS, deps.log, () =>
            reportSwap(
              swapId,
              { ...deps, ...deps.settings() },
              { job: job.name, ...(queuedMs === undefined ? {} : { queuedMs }) },
            ),
          );
        } finally {
          stopRenewing();
          await deps.store.reports.unlock(swapId, lockToken).catch(() => undefined);
        }
        if (result.kind === "done") return;
        if (result.kind === "turn") {
          // the same job again when this is the swap's turn job (a second one with its id would be dropped)
          if (job.name === REPORT_JOBS.turn) {
            await job.moveToDelayed(Date.now(), token);
            throw new DelayedError();
          }
          await deps.queue.turn(swapId, result.ended);
          return;
        }
        const kind = result.why === "slack" ? REPORT_JOBS.retry : REPORT_JOBS.card;
        if (job.name === kind) {
          await job.moveToDelayed(Date.now() + result.ms, token);
          throw new DelayedError();
        }
        await deps.queue.later(swapId, kind, result.ms);
      },
    ),
    // it parks itself (moveToDelayed) and runs again: its lock is renewed by the run (src/queue/job-lock.ts)
    {
      connection,
      prefix: QUEUE_PREFIX,
      concurrency,
      metrics: WORKER_METRICS,
      ...stepJobLockOptions(JOB_LOCK_MS),
    },
  );
  worker.on("failed", (job, error) => {
    deps.log.error(
      { swap: job?.data.swapId, job: job?.name, err: describeError(error) },
      "report job failed",
    );
  });
  worker.on("error", (error) => watch.reachability.error("report worker", error));
  return worker;
}
