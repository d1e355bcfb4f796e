import { clearedLockLine, deadReason } from "../src/reporter/host-lock-message.ts";
import type { CommandDeps } from "../src/slack/sub-command.ts";
import { SYSTEM_ACTOR } from "../src/store/audit-log.ts";
import { checkHostLock, clearStuckLock, isStuck } from "../src/store/host-lock-check.ts";

export type TakeHost =
  /** The host is this swap's; `note` says what was cleared to make room, if anything. */
  | { ok: true; note?: string }
  /** It is not: `busy` says who holds it (the swap running there, or a stuck one and how to clear it). */
  | { ok: false; busy: string }
  | { ok: false; error: unknown };

/**
 * Takes the host lock for a new swap `id`. When another swap holds it, that swap is looked at
 * (src/store/host-lock-check.ts): a live one keeps the host; one that can never run again and had not
 * touched the host (no switch) loses the lock and ends as failed, and this swap takes the host. One whose
 * switch had begun is left for a person to clear with `/llm cancel`, after looking at the service.
 */
export async function takeHost(
  host: string,
  id: string,
  { store, swaps }: Pick<CommandDeps, "store" | "swaps">,
): Promise<TakeHost> {
  const deps = { store, jobState: (swapId: string) => swaps.jobState(swapId) };
  try {
    let note: string | undefined;
    for (let attempt = 0; ; attempt++) {
      const lock = await store.locks.lockHost(host, id);
      if (lock.ok) return note === undefined ? { ok: true } : { ok: true, note };
      const held = await checkHostLock(host, deps);
      if (held.holder === undefined) continue; // released meanwhile: try again
      if (!isStuck(held) || attempt >= 3) {
        const running = held.record;
        // A swap requested in the same instant (a double submit) holds the lock before its record is saved.
        const where =
          running === undefined
            ? "was requested just now"
            : `(${running.request.model.repo}) is at stage *${running.step}*`;
        return {
          ok: false,
          busy: `🚧 ${host} is busy: swap \`${held.holder}\` ${where}. One swap per host at a time; wait for it to finish or cancel it.`,
        };
      }
      if (held.touched) {
        return {
          ok: false,
          busy: `🚧 ${host} is locked by swap \`${held.holder}\`, which ${deadReason(held.liveness.why, held.liveness.job)} after its switch had begun: the host may serve neither model. Check \`/llm status ${host}\`, then clear the lock with \`/llm cancel ${held.holder}\` and swap again.`,
        };
      }
      const reason = `it ${deadReason(held.liveness.why, held.liveness.job)}; its host lock was cleared for swap ${id}`;
      if (await clearStuckLock(held, { by: SYSTEM_ACTOR, outcome: "failed", reason }, deps)) {
        note = clearedLockLine(held, "that swap marked failed");
      }
    }
  } catch (error) {
    return { ok: false, error };
  }
}
