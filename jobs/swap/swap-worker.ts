import { DelayedError, type Job, Worker } from "bullmq";
import type { Redis } from "ioredis";
import { QUEUE_PREFIX } from "../../src/queue/redis-connection.ts";
import { SWAP_QUEUE } from "../../src/queue/swap-queue.ts";
import { advanceSwap } from "./advance-swap.ts";
import type { SwapDeps } from "./swap-context.ts";

/**
 * The swap worker: each job advances one swap, then either completes or moves itself to delayed until
 * its next look (BullMQ's step-job pattern), so waiting for a download or an approval holds no slot.
 */
export function createSwapWorker(connection: Redis, deps: SwapDeps, concurrency = 10): Worker {
  const worker = new Worker(
    SWAP_QUEUE,
    async (job: Job<{ swapId: string }>, token?: string) => {
      const finalAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
      const result = await advanceSwap(job.data.swapId, deps, finalAttempt);
      if (!result.done) {
        await job.moveToDelayed(Date.now() + result.waitMs, token);
        throw new DelayedError();
      }
    },
    { connection, prefix: QUEUE_PREFIX, concurrency },
  );
  worker.on("failed", (job, error) => {
    deps.log.error(
      { swap: job?.data.swapId, err: error.message, attempts: job?.attemptsMade },
      "swap job failed",
    );
  });
  worker.on("error", (error) => deps.log.warn({ err: error.message }, "swap worker error"));
  return worker;
}
