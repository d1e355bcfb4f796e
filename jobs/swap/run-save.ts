import type { Store } from "../../src/store/store.ts";
import { urgentFor } from "../../src/swap/urgency.ts";
import type { SwapDeps } from "./create-stage-context.ts";
import type { Finished } from "./stages/finish.ts";
import type { SwapLease } from "./swap-lease.ts";
import type { RunningSwap } from "./swap-state.ts";

/** A run's checkpoint: saves the swap's record with what its stages queued; at its end, with `finished`. */
export type RunSave = (swap: RunningSwap, finished?: Finished) => Promise<void>;

/**
 * The save of one run of a swap, made only while the run holds the swap's lease and the swap has not
 * ended, both checked by Redis in the script that writes it (src/store/save-writes.ts): a run that lost
 * the lease (another took the swap over) or whose swap was ended from outside saves nothing, and stops
 * (SWAP_SUPERSEDED, SWAP_ENDED). A check before the write would leave a pause between them in which the
 * lease can pass to another run. The final save (the record has an outcome) writes what the host serves,
 * its benchmark and the host's release with the record.
 */
export function runSave(
  { store, reports }: { store: Pick<Store, "swaps" | "hosts" | "locks">; reports: SwapDeps["reports"] },
  lease: SwapLease,
): RunSave {
  return async (swap, finished) => {
    const pending = swap.drain();
    try {
      await store.swaps.save(swap.mutable, {
        events: pending.events,
        audit: pending.audit,
        also: (tx) => {
          if (swap.record.outcome === undefined) return;
          if (finished?.serving !== undefined)
            store.hosts.setServingInTransaction(tx, swap.record.host, finished.serving);
          if (finished?.benchmark !== undefined)
            store.hosts.setLastBenchmarkInTransaction(tx, swap.record.host, finished.benchmark);
          store.locks.unlockHostInTransaction(tx, swap.record.host, swap.record.id);
        },
        when: { lease: lease.token },
      });
    } catch (error) {
      swap.restore(pending);
      throw error;
    }
    // the reporter looks soon; if this ask is lost (Redis blip, a crash), its sweep finds the swap anyway.
    // A rollout's host that ended does not go ahead of the rest: its rollout's own lines say how it went
    const ended = urgentFor(swap.record, swap.record.outcome !== undefined);
    await reports.soon(swap.record.id, ended ? "ended" : "routine").catch(() => undefined);
  };
}
