import { Queue } from "bullmq";
import { z } from "zod";
import { CodedError } from "../errors.ts";
import { QUEUE_PREFIX } from "../store/keys.ts";
import { withTimeout } from "../with-timeout.ts";
import type { RedisClient } from "./redis-client.ts";

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
  answer: z.enum(["private", "channel"]).optional(),
});
export type StatusJob = z.infer<typeof statusJobSchema>;

/** `/llm history`: the ledger of one host or all, newest first, posted to the channel it was asked in. */
export const historyJobSchema = z.object({
  host: z.string().optional(),
  limit: z.number().int().min(1).max(50),
  channel: z.string(),
  user: z.string(),
  requestedAt: z.string(),
});
export type HistoryJob = z.infer<typeof historyJobSchema>;

export const JOB_NAMES = { status: "status", history: "history" } as const;

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
