import { randomBytes } from "node:crypto";
import { DelayedError, type Job, Worker } from "bullmq";
import type { Redis } from "ioredis";
import { describeError } from "../src/errors.ts";
import { REPORT_JOBS, REPORT_QUEUE, type ReportQueue } from "../src/queue/report-queue.ts";
import { WORKER_METRICS } from "../src/queue/worker-metrics.ts";
import type { WorkerWatch } from "../src/queue/worker-watch.ts";
import { type ReporterDeps, type ReportResult, reportSwap } from "../src/reporter/swap-reporter.ts";
import { QUEUE_PREFIX } from "../src/store/keys.ts";

export interface ReportWorkerDeps extends ReporterDeps {
  queue: ReportQueue;
}

/**
 * One reporter per swap at a time: a lock renewed every 5 s while the reporter waits on Slack (a
 * Retry-After), and short, so a reporter that died holds back the next one for at most 15 s.
 */
const LOCK_MS = 15_000;
/**
 * Swaps reported at once by one process. A reporter spends nearly all its time waiting for its turn at
 * Slack, so more slots would let every swap's plan and outcome queue at the pacer (which puts them first):
 * at 64, the bench's 25 swaps in one channel were all approved within 63 s instead of 230 s and the
 * median outcome reached its card 73 s after the swap ended instead of 131 s; but in two runs of three
 * the bot then failed to acknowledge a reaction within Slack's 3 s, which is not understood yet. 8 until
 * it is (docs/benchmarks.md, "concurrent").
 */
export const REPORT_CONCURRENCY = 8;

/** How often a sweep looks for swaps the reporter has not caught up with. */
export const SWEEP_EVERY_MS = 30_000;

/**
 * The reporter's worker: each job brings one swap's card and thread up to date (src/reporter/). Runs in
 * every worker process; a per-swap lock keeps two reporters off one swap, and the queue's retry and card
 * jobs bring it back when Slack refused or the card's next edit is due. Nothing here ever touches a swap.
 */
export function createReportWorker(
  connection: Redis,
  deps: ReportWorkerDeps,
  watch: WorkerWatch,
  concurrency = REPORT_CONCURRENCY,
): Worker {
  const worker = new Worker(
    REPORT_QUEUE,
    watch.inFlight.track(async (job: Job<{ swapId?: string }>, token?: string) => {
      if (job.name === REPORT_JOBS.sweep) {
        for (const swapId of await deps.store.reports.pending(SWEEP_EVERY_MS / 3))
          await deps.queue.soon(swapId);
        return;
      }
      const swapId = job.data.swapId;
      if (swapId === undefined) return;
      const lockToken = randomBytes(8).toString("hex");
      if (!(await deps.store.reports.lock(swapId, lockToken, LOCK_MS))) {
        // another reporter is on this swap: look again right after it (it may not have seen what this job is for)
        await job.moveToDelayed(Date.now() + 250, token);
        throw new DelayedError();
      }
      const renew = setInterval(() => {
        deps.store.reports.renewLock(swapId, lockToken, LOCK_MS).catch(() => undefined);
      }, LOCK_MS / 3);
      renew.unref();
      let result: ReportResult;
      try {
        if (job.name === REPORT_JOBS.report) {
          // Slack refused lately: the one retry job looks at its time; looks in between would only hammer Slack
          const { retryAt } = await deps.store.reports.get(swapId);
          if (retryAt !== undefined && retryAt > Date.now()) return;
        }
        result = await reportSwap(swapId, deps);
      } finally {
        clearInterval(renew);
        await deps.store.reports.unlock(swapId, lockToken).catch(() => undefined);
      }
      if (result.kind === "done") return;
      const kind = result.why === "slack" ? REPORT_JOBS.retry : REPORT_JOBS.card;
      if (job.name === kind) {
        await job.moveToDelayed(Date.now() + result.ms, token);
        throw new DelayedError();
      }
      await deps.queue.later(swapId, kind, result.ms);
    }),
    { connection, prefix: QUEUE_PREFIX, concurrency, metrics: WORKER_METRICS },
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
