import { Queue } from "bullmq";
import type { RedisClient } from "../redis/redis-client.ts";
import { QUEUE_PREFIX } from "../store/keys.ts";

export const REPORT_QUEUE = "reports";

/**
 * Job names: a look asked for by a save or a decision, a retry after Slack refused, a paced card edit, the
 * rest of a thread after a run gave its reporter back in a busy channel, a sweep.
 */
export const REPORT_JOBS = {
  report: "report",
  retry: "retry",
  card: "card",
  turn: "turn",
  sweep: "sweep",
} as const;

/**
 * BullMQ runs jobs without a priority before any with one: looks that someone is waiting for (a new swap's
 * card, a decision on a plan, a swap that has ended) carry none; every other look carries this one, so
 * with many swaps at once a free reporter goes to them first.
 */
const ROUTINE = 10;
/** The rest of an ended swap's thread: after the looks someone waits for, before running swaps' progress. */
const ENDED_THREAD = 5;

/**
 * The reporter's queue. Every save of a swap asks for a look (`soon`); a look that Slack refused is
 * retried by one delayed job per swap, and a card edit that must wait for its pace by another, so an
 * outage or a busy card never piles up jobs. A sweep every half minute looks at every swap the reporter
 * has not caught up with, in case a look was asked for by a process that died before it could.
 */
/** Why a look goes ahead of routine ones: someone waits for it (a decision, a new card), or the swap ended. */
export type LookUrgency = "routine" | "urgent" | "ended";

export class ReportQueue {
  readonly queue: Queue;

  constructor(connection: RedisClient) {
    this.queue = new Queue(REPORT_QUEUE, {
      connection,
      prefix: QUEUE_PREFIX,
      defaultJobOptions: {
        removeOnComplete: true,
        removeOnFail: { age: 86_400 },
        attempts: 5,
        backoff: { type: "exponential", delay: 1000 },
      },
    });
    this.queue.on("error", () => undefined);
  }

  /**
   * A look at the swap as soon as a reporter is free: `urgent` and `ended` ahead of the routine ones.
   * `ended` (the swap's outcome is saved) travels with the job, so a reporter that finds another run on
   * the swap knows to hurry that run without reading the record.
   */
  async soon(swapId: string, urgency: LookUrgency = "routine"): Promise<void> {
    await this.queue.add(
      REPORT_JOBS.report,
      urgency === "ended" ? { swapId, ended: true } : { swapId },
      urgency === "routine" ? { priority: ROUTINE } : {},
    );
  }

  /**
   * The rest of a swap's thread, once a reporter is free and the looks someone waits for have had theirs
   * (one such job per swap: the run that took it gives it back itself, see the report worker).
   */
  async turn(swapId: string, ended: boolean): Promise<void> {
    await this.queue.add(
      REPORT_JOBS.turn,
      { swapId },
      { jobId: `turn-${swapId}`, removeOnFail: true, priority: ended ? ENDED_THREAD : ROUTINE },
    );
  }

  /** One delayed look per swap and kind (a second one while the first waits is the same job). */
  async later(swapId: string, kind: "retry" | "card", ms: number): Promise<void> {
    await this.queue.add(
      kind,
      { swapId },
      {
        jobId: `${kind}-${swapId}`,
        delay: Math.max(0, Math.round(ms)),
        removeOnFail: true,
        priority: ROUTINE,
      },
    );
  }

  /** The periodic sweep (idempotent: every worker process upserts the same scheduler). */
  async scheduleSweep(everyMs: number): Promise<void> {
    await this.queue.upsertJobScheduler(
      "report-sweep",
      { every: everyMs },
      { name: REPORT_JOBS.sweep, data: {} },
    );
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}
