import { escapeMrkdwn } from "../escape-mrkdwn.ts";
import { duration } from "../format-duration.ts";
import type { DeadReason, HeldLock } from "../store/host-lock-check.ts";

/** Why a swap that holds a lock will never run again, as "which …" / "that swap …" would go on. */
export function deadReason(why: DeadReason, job?: string): string {
  switch (why) {
    case "no-record":
      return "has no record (the bot stopped before saving it)";
    case "no-job":
      return "has no job (the bot stopped before queueing it)";
    case "job-ended":
      return `has no live job (its job is ${job ?? "gone"}, and the worker stopped before the swap's final save)`;
    case "finished":
      return "has already ended (its final save did not give the host back)";
  }
}

/** "2026-12-02 00:34 UTC (10 min ago)". */
export function sinceWhen(iso: string, now: number = Date.now()): string {
  const ago = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  return `${iso.slice(0, 16).replace("T", " ")} UTC (${duration(ago)} ago)`;
}

/**
 * `/llm status`: a lock nothing will ever release — who holds it, since when, why it is stuck, and the
 * exact command that clears it.
 */
export function stuckLockLine(lock: HeldLock & { liveness: { alive: false } }, now?: number): string {
  const host = escapeMrkdwn(lock.host);
  const why = deadReason(lock.liveness.why, lock.liveness.job);
  const clear = `\`/llm cancel ${lock.holder}\``;
  const after = lock.touched
    ? `The switch had begun, so *${host}* may serve neither model: check the service below, clear the lock with ${clear}, then \`/llm rollback ${host}\` if the old model should come back.`
    : `Nothing was changed on the host. Clear it with ${clear} (a new \`/llm swap\` on ${host} clears it too).`;
  return `🔒 *${host}* is locked by swap \`${lock.holder}\` since ${sinceWhen(lock.since, now)}, but that swap ${why}: nothing will ever release the lock. ${after}`;
}

/** What clearing a stuck lock did, for the one who asked (`/llm cancel`) or whose swap it made room for. */
export function clearedLockLine(
  lock: HeldLock & { liveness: { alive: false } },
  marked: "the swap marked cancelled" | "that swap marked failed",
): string {
  const host = escapeMrkdwn(lock.host);
  const why = deadReason(lock.liveness.why, lock.liveness.job);
  const ended = lock.record === undefined || lock.record.outcome !== undefined;
  const head = `🔓 *${host}*'s lock was held by swap \`${lock.holder}\`, which ${why}: the lock is cleared${ended ? "" : ` and ${marked}`}.`;
  if (lock.touched)
    return `${head} Its switch had begun: check \`/llm status ${host}\`, and \`/llm rollback ${host}\` if the old model should come back.`;
  const tasks = lock.record?.tasks ?? {};
  if (tasks.download !== undefined || tasks.build !== undefined) {
    const dir = lock.record?.plan?.modelDir;
    return `${head} Its download and engine build had been started on the host; they are not stopped by this${dir === undefined ? "" : ` (files in ${dir})`}.`;
  }
  return `${head} Nothing had been changed on the host.`;
}
