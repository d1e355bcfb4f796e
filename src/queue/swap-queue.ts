import { Queue } from "bullmq";
import { CodedError } from "../errors.ts";
import type { RedisClient } from "../redis/redis-client.ts";
import { QUEUE_PREFIX } from "../store/keys.ts";

export const SWAP_QUEUE = "swaps";

/**
 * One BullMQ job per swap (job id = swap id). The job advances the swap as far as it can, then parks
 * itself as delayed while it waits (download, build, approval), so no worker slot is held; a decision
 * promotes it at once.
 */
export class SwapQueue {
  private readonly queue: Queue;

  constructor(connection: RedisClient) {
    this.queue = new Queue(SWAP_QUEUE, {
      connection,
      prefix: QUEUE_PREFIX,
      defaultJobOptions: { removeOnComplete: { age: 7 * 86_400 }, removeOnFail: { age: 30 * 86_400 } },
    });
    this.queue.on("error", () => undefined);
  }

  async enqueue(swapId: string): Promise<void> {
    try {
      await this.queue.add(
        "swap",
        { swapId },
        { jobId: swapId, attempts: 5, backoff: { type: "exponential", delay: 2000 } },
      );
    } catch (error) {
      throw new CodedError(
        "QUEUE_UNAVAILABLE",
        `the job queue is unavailable (${(error as Error).message})`,
        "Redis is down or unreachable: check REDIS_URL (or REDIS_SENTINELS, REDIS_CLUSTER_NODES) and the redis-server; nothing was started, try again once it is back",
        { cause: error },
      );
    }
  }

  /**
   * The state of the swap's job (`waiting`, `delayed`, `active`, `prioritized`, `completed`, `failed`, …),
   * or undefined when it has none: the swap was never queued, or its job was removed.
   */
  async jobState(swapId: string): Promise<string | undefined> {
    try {
      const job = await this.queue.getJob(swapId);
      if (job === undefined) return undefined;
      const state = await job.getState();
      return state === "unknown" ? undefined : state;
    } catch (error) {
      throw new CodedError(
        "QUEUE_UNAVAILABLE",
        `the job queue is unavailable (${(error as Error).message})`,
        "Redis is down or unreachable: check REDIS_URL (or REDIS_SENTINELS, REDIS_CLUSTER_NODES) and the redis-server, then try again",
        { cause: error },
      );
    }
  }

  /** Wakes a parked swap now (after a decision); harmless when it is already running. */
  async wake(swapId: string): Promise<void> {
    const job = await this.queue.getJob(swapId);
    if (job === undefined) return;
    try {
      await job.promote();
    } catch {
      // not delayed (running or waiting already): it will see the decision on its next step
    }
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}
