import { describeError } from "../errors.ts";
import type { Logger } from "../log.ts";
import {
  checkHostLock,
  type HeldLock,
  type HostLock,
  type HostLockCheckDeps,
  isStuck,
} from "../store/host-lock-check.ts";
import type { Store } from "../store/store.ts";
import type { SwapRecord } from "../swap/swap-record.ts";

/** What `/llm status` and the fleet page say about a host's swaps. */
export interface HostSwaps {
  /** The host's lock as read (undefined: it could not be read). */
  lock: HostLock | undefined;
  /** The swap running on the host now: it holds the lock, has not ended, and can still run. */
  active?: SwapRecord;
  /** A lock nothing will ever release (its swap can never run again). */
  stuck?: HeldLock & { liveness: { alive: false } };
  /** The host's last finished swap. */
  last?: SwapRecord;
}

export interface HostSwapsDeps extends HostLockCheckDeps {
  store: Pick<Store, "locks" | "swaps" | "audit">;
  log: Logger;
}

/**
 * A host's swaps as `/llm status` reads them: the lock and whether its holder can still run
 * (src/store/host-lock-check.ts), and the last finished swap of the host's ledger. A lock that cannot be
 * read is logged and left out; it never fails the answer.
 */
export async function readHostSwaps(host: string, deps: HostSwapsDeps): Promise<HostSwaps> {
  const lock = await checkHostLock(host, deps).catch((error: unknown) => {
    deps.log.warn({ host, err: describeError(error) }, "could not check the host lock");
    return undefined;
  });
  const stuck = lock !== undefined && isStuck(lock) ? lock : undefined;
  const running = lock?.holder === undefined ? undefined : lock.record;
  const [last] = (await deps.store.swaps.history({ host, limit: 5 })).records.filter(
    (r) => r.outcome !== undefined,
  );
  return {
    lock,
    ...(running === undefined || running.outcome !== undefined || stuck !== undefined
      ? {}
      : { active: running }),
    ...(stuck === undefined ? {} : { stuck }),
    ...(last === undefined ? {} : { last }),
  };
}
