import { Queue } from "bullmq";
import type { Redis } from "ioredis";
import { QUEUE_PREFIX } from "../store/keys.ts";

export const REPORT_QUEUE = "reports";

/** Job names: a look asked for by a save or a decision, a retry after Slack refused, a paced card edit, a sweep. */
export const REPORT_JOBS = { report: "report", retry: "retry", card: "card", sweep: "sweep" } as const;

/**
 * The reporter's queue. Every save of a swap asks for a look (`soon`); a look that Slack refused is
 * retried by one delayed job per swap, and a card edit that must wait for its pace by another, so an
 * outage or a busy card never piles up jobs. A sweep every half minute looks at every swap the reporter
 * has not caught up with, in case a look was asked for by a process that died before it could.
 */
export class ReportQueue {
  readonly queue: Queue;

  constructor(connection: Redis) {
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

  /** A look at the swap as soon as a reporter is free. */
  async soon(swapId: string): Promise<void> {
    await this.queue.add(REPORT_JOBS.report, { swapId });
  }

  /** One delayed look per swap and kind (a second one while the first waits is the same job). */
  async later(swapId: string, kind: "retry" | "card", ms: number): Promise<void> {
    await this.queue.add(
      kind,
      { swapId },
      { jobId: `${kind}-${swapId}`, delay: Math.max(0, Math.round(ms)), removeOnFail: true },
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
