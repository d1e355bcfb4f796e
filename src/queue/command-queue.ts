import { Queue } from "bullmq";
import { z } from "zod";
import { CodedError } from "../errors.ts";
import type { RedisClient } from "../redis/redis-client.ts";
import { QUEUE_PREFIX } from "../store/keys.ts";
import { withTimeout } from "../with-timeout.ts";

export const COMMAND_QUEUE = "commands";

/** Job data crosses process boundaries: it is validated on both sides. */
export const statusJobSchema = z.object({
  hosts: z.array(z.string()).min(1),
  channel: z.string(),
  user: z.string(),
  requestedAt: z.string(),
  /** Without a host: one compact table of every host. */
  fleet: z.boolean().optional(),
  /** The whole fleet table (`--all`), not the summary a big fleet gets. */
  all: z.boolean().optional(),
  /**
   * Who sees the answer: `private`, only `user` (an ephemeral in `channel`), or `channel`, everyone. A job
   * queued before this field existed has none and is answered in the channel, as it was then.
   */
  answer: z.enum(["private", "channel", "return"]).optional(),
});
export type StatusJob = z.infer<typeof statusJobSchema>;

/** `/llm history`: the ledger of one host or all, newest first, posted to the channel it was asked in. */
export const historyJobSchema = z.object({
  host: z.string().optional(),
  limit: z.number().int().min(1).max(50),
  channel: z.string(),
  user: z.string(),
  requestedAt: z.string(),
  /** `return`: the rows are the job's result, for the CLI and the HTTP API; else posted in `channel`. */
  answer: z.enum(["channel", "return"]).optional(),
});
export type HistoryJob = z.infer<typeof historyJobSchema>;

/** `/llm gc [host] [--dry-run]`: what retention lets go on each host, shown or deleted. */
export const gcJobSchema = z.object({
  hosts: z.array(z.string()).min(1),
  dryRun: z.boolean(),
  channel: z.string(),
  user: z.string(),
  requestedAt: z.string(),
});
export type GcJob = z.infer<typeof gcJobSchema>;

export const JOB_NAMES = { status: "status", history: "history", gc: "gc" } as const;

const ENQUEUE_TIMEOUT_MS = 1500;

/** The Slack side's handle on the queue: it only ever adds jobs. */
export class CommandQueue {
  private readonly queue: Queue;

  constructor(connection: RedisClient) {
    this.queue = new Queue(COMMAND_QUEUE, {
      connection,
      prefix: QUEUE_PREFIX,
      defaultJobOptions: { removeOnComplete: { age: 3600, count: 1000 }, removeOnFail: { age: 86_400 } },
    });
    // Connection errors surface on add(); without a listener they would crash the process.
    this.queue.on("error", () => undefined);
  }

  async enqueueStatus(data: StatusJob): Promise<string> {
    const job = await enqueueWithin(
      this.queue.add(JOB_NAMES.status, statusJobSchema.parse(data), { attempts: 2 }),
    );
    return job.id ?? "";
  }

  async enqueueHistory(data: HistoryJob): Promise<string> {
    const job = await enqueueWithin(
      this.queue.add(JOB_NAMES.history, historyJobSchema.parse(data), { attempts: 2 }),
    );
    return job.id ?? "";
  }

  /**
   * Runs a status or history job whose answer is its result (`answer: "return"`: the CLI and the HTTP
   * API), and waits for it: the same job a Slack command queues, done by the same workers. Throws
   * QUEUE_UNAVAILABLE when it cannot be queued, and COMMAND_NO_ANSWER when no worker finished it in time.
   */
  async ask(
    job: { name: "status"; data: StatusJob } | { name: "history"; data: HistoryJob },
    timeoutMs: number,
    pollMs = 100,
  ): Promise<unknown> {
    const id =
      job.name === "status"
        ? await this.enqueueStatus({ ...job.data, answer: "return" })
        : await this.enqueueHistory({ ...job.data, answer: "return" });
    const until = Date.now() + timeoutMs;
    for (;;) {
      const found = await enqueueWithin(this.queue.getJob(id));
      if (found?.finishedOn !== undefined) {
        if (found.failedReason === undefined || found.failedReason === "") return found.returnvalue;
        if ((found.attemptsMade ?? 0) >= (found.opts.attempts ?? 1))
          throw new CodedError(
            "COMMAND_FAILED",
            `the ${job.name} job failed: ${found.failedReason}`,
            "the worker's log says why; try again, or look at the host with `modelswap doctor`",
          );
      }
      if (Date.now() >= until)
        throw new CodedError(
          "COMMAND_NO_ANSWER",
          `no worker answered the ${job.name} request within ${Math.round(timeoutMs / 1000)} s`,
          "check that a worker runs (`modelswap start` or `modelswap worker`) and that its /healthz is ok; the request stays queued and is answered once one takes it",
        );
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
  }

  async enqueueGc(data: GcJob): Promise<string> {
    // once: a second run would find nothing left to delete, and report that instead of what was freed
    const job = await enqueueWithin(this.queue.add(JOB_NAMES.gc, gcJobSchema.parse(data), { attempts: 1 }));
    return job.id ?? "";
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}

async function enqueueWithin<T>(work: Promise<T>): Promise<T> {
  try {
    return await withTimeout(
      work,
      ENQUEUE_TIMEOUT_MS,
      () => new Error(`no answer from Redis within ${ENQUEUE_TIMEOUT_MS} ms`),
    );
  } catch (error) {
    throw new CodedError(
      "QUEUE_UNAVAILABLE",
      `the job queue is unavailable (${(error as Error).message})`,
      "Redis is down or unreachable: check REDIS_URL (or REDIS_SENTINELS, REDIS_CLUSTER_NODES) and the redis-server; the command was not queued, try again once it is back",
      { cause: error },
    );
  }
}
