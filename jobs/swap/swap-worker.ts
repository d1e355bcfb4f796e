import { hostname } from "node:os";
import { DelayedError, type Job, Worker } from "bullmq";
import { isRolloutId } from "../../src/grammar/rollout-id.ts";
import { holdingLock, stepJobLockOptions } from "../../src/queue/job-lock.ts";
import { SWAP_QUEUE } from "../../src/queue/swap-queue.ts";
import { WORKER_METRICS } from "../../src/queue/worker-metrics.ts";
import type { WorkerWatch } from "../../src/queue/worker-watch.ts";
import type { RedisClient } from "../../src/redis/redis-client.ts";
import { QUEUE_PREFIX } from "../../src/store/keys.ts";
import { advanceRollout } from "../rollout/advance-rollout.ts";
import { abandonSwap, advanceSwap } from "./advance-swap.ts";
import type { SwapDeps } from "./create-stage-context.ts";

/** Wakes the rollout a swap belongs to, if any (best effort: the rollout polls anyway). */
async function wakeRollout(swapId: string, deps: SwapDeps): Promise<void> {
  const record = await deps.store.swaps.get(swapId).catch(() => undefined);
  if (record?.rollout !== undefined) await deps.swapJobs.wake(record.rollout.id).catch(() => undefined);
}

/**
 * How often one swap's job may be found stalled (its worker died mid-step) and simply run again: every
 * step is idempotent, so a restart resumes the swap; only a job that keeps killing its worker is given up.
 */
const MAX_STALLS = 25;

/**
 * The swap worker: each job advances one swap, then either completes or moves itself to delayed until
 * its next look (BullMQ's step-job pattern), so waiting for a download or an approval holds no slot.
 * A running step holds BullMQ's lock, renewed by the run while this process lives (an hour-long health wait keeps
 * it); when the process dies, another worker finds the step stalled and runs it again.
 */
export function createSwapWorker(
  connection: RedisClient,
  deps: SwapDeps,
  watch: WorkerWatch,
  concurrency = 10,
): Worker {
  // read once: a reload keeps these (src/reload/config-changes.ts, RESTART_ONLY)
  const { swaps } = deps.config.current().file;
  const lockMs = swaps.lockSeconds * 1000;
  const worker = new Worker(
    SWAP_QUEUE,
    watch.inFlight.track(SWAP_QUEUE, async (job: Job<{ swapId: string }>, token?: string) => {
      // a rollout's job rides the same queue (its id is `ro-…`): it waits as a swap does, and wakes alike
      const id = job.data.swapId;
      const result = await holdingLock(job, token, lockMs, deps.log, () =>
        isRolloutId(id) ? advanceRollout(id, deps) : advanceSwap(id, deps),
      );
      if (!result.done) {
        await job.moveToDelayed(Date.now() + result.waitMs, token);
        throw new DelayedError();
      }
      // a rollout's host has ended: its rollout looks now (its gate, its next batch), not at its next poll
      if (!isRolloutId(id)) await wakeRollout(id, deps);
    }),
    {
      connection,
      prefix: QUEUE_PREFIX,
      concurrency,
      // renewed by the run itself (holdingLock): a step job re-taken at once must not lose it (job-lock.ts)
      ...stepJobLockOptions(lockMs),
      stalledInterval: swaps.stalledCheckSeconds * 1000,
      maxStalledCount: MAX_STALLS,
      metrics: WORKER_METRICS,
      // Stored on each job it takes (BullMQ's processedBy): which process ran a swap's last step.
      name: `${hostname()}:${process.pid}`,
    },
  );
  worker.on("failed", (job, error) => {
    deps.log.error(
      { swap: job?.data.swapId, err: error.message, attempts: job?.attemptsMade },
      "swap job failed",
    );
    if (job === undefined) return;
    // Attempts spent: the swap must still end, with the old service back if the switch had begun.
    void job
      .getState()
      .then(async (state) => {
        if (state === "failed" && !isRolloutId(job.data.swapId))
          await abandonSwap(job.data.swapId, `the swap's job failed: ${error.message}`, deps);
      })
      .catch((err: unknown) =>
        deps.log.error({ swap: job.data.swapId, err: (err as Error).message }, "could not end a failed swap"),
      );
  });
  worker.on("stalled", (jobId) =>
    deps.log.warn({ swap: jobId }, "swap step stalled (its worker died); running it again"),
  );
  worker.on("error", (error) => watch.reachability.error("swap worker", error));
  return worker;
}
