import { randomBytes } from "node:crypto";
import type { FenceToken } from "../../src/host/fence.ts";
import { keepRenewed } from "../../src/keep-renewed.ts";
import type { SwapLocks } from "../../src/store/swap-locks.ts";

/**
 * A run's hold on one swap: its lease in Redis (one run of a swap at a time, kept renewed while the run
 * lives) and the fence number that came with it. Each save of the run names its token: Redis refuses it
 * (SWAP_SUPERSEDED) in the same script that would write it once the lease is another's
 * (src/store/save-writes.ts); the fence makes the hosts themselves refuse the run's changes once a later
 * run has made one (src/host/fence.ts), since a pause can fall between any check here and a command.
 */
export interface SwapLease {
  readonly fence: FenceToken;
  /** This run's token: the lease holds it while the run holds the swap. */
  readonly token: string;
  /** Stops renewing and gives the lease back. */
  release(): Promise<void>;
}

/** Takes the swap's lease for `ms` (renewed every third of it); undefined when another run holds it. */
export async function takeSwapLease(
  locks: SwapLocks,
  swapId: string,
  ms: number,
): Promise<SwapLease | undefined> {
  const token = randomBytes(8).toString("hex");
  const first = await locks.takeLease(swapId, token, ms);
  if (first === undefined) return undefined;
  let lost = false;
  let number = first;
  const stopRenewing = keepRenewed(
    () => locks.renewLease(swapId, token, ms),
    ms / 3,
    () => {
      lost = true;
    },
  );
  return {
    fence: {
      get number() {
        return number;
      },
      async catchUp(seen) {
        const next = lost ? undefined : await locks.catchUpFence(swapId, token, seen);
        if (next === undefined) return false;
        number = next;
        return true;
      },
    },
    token,
    async release() {
      stopRenewing();
      await locks.releaseLease(swapId, token).catch(() => undefined);
    },
  };
}
