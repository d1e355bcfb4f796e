import type { Job } from "bullmq";
import { keepRenewed } from "../keep-renewed.ts";
import type { Logger } from "../log.ts";

/**
 * Worker options for a step job (one that parks itself with moveToDelayed and a DelayedError, then runs
 * again): its lock is renewed by `holdingLock`, under the run's own token, not by BullMQ's lock manager.
 *
 * BullMQ (6.7, worker.js processJob) tracks the locks it renews by job id, and untracks the id in the
 * `finally` of each run. A parked job that is due at once (a wait of 0, or a short one on a loaded
 * machine) can be taken again by another slot of the same worker before the run that parked it has
 * reached that `finally` (it is still fetching its own next job). That run then untracks the new run's
 * lock, nobody renews it, and after `lockDuration` the job is called stalled and taken again, though its
 * process is well: test/e2e/job-lock.test.ts shows it. A run renewing its own token cannot be untracked
 * by another.
 */
export function stepJobLockOptions(lockMs: number): { lockDuration: number; skipLockRenewal: true } {
  return { lockDuration: lockMs, skipLockRenewal: true };
}

/**
 * Runs `work` while renewing `job`'s lock (every quarter of `lockMs`, so a process held up for up to
 * three quarters of it keeps the lock). When Redis says the lock is no longer this run's, it is logged
 * once and renewal stops: the job was found stalled and may be running elsewhere, and what it does must
 * be safe against that (a swap's lease, a report's lock).
 */
export async function holdingLock<T>(
  job: Pick<Job, "id" | "name" | "extendLock">,
  token: string | undefined,
  lockMs: number,
  log: Logger,
  work: () => Promise<T>,
): Promise<T> {
  if (token === undefined) return await work();
  const stop = keepRenewed(
    async () => (await job.extendLock(token, lockMs)) === 1,
    lockMs / 4,
    () =>
      log.warn(
        { code: "JOB_LOCK_LOST", job: job.id, name: job.name, lockMs },
        `a running job's queue lock is gone (this process was held up for longer than its ${lockMs / 1000} s lock): another worker may run it too. Fix: see docs/operations.md (JOB_LOCK_LOST)`,
      ),
  );
  try {
    return await work();
  } finally {
    stop();
  }
}
