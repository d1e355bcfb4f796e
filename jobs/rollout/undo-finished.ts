import { newSwapId } from "../../src/grammar/swap-id.ts";
import { queueSwap } from "../../src/queue/queue-swap.ts";
import type { RolloutHost, RolloutRecord } from "../../src/rollout/rollout-record.ts";
import { rollbackRecord } from "../../src/store/rollback-record.ts";
import { approveFor, planned } from "./release-host.ts";
import type { RolloutDeps } from "./rollout-deps.ts";

/**
 * Takes back the hosts of a halted wave whose own swap succeeded: for each, a rollback swap (what
 * `/llm rollback` queues) marked with the rollout, which approves it itself as soon as it has planned
 * (the approver approved the rollout, and a wave that did not pass does not keep the new model). The id
 * is noted and saved before its swap is queued, so a run that dies in between never queues a second one.
 * Whether any is still under way; what became of each is noted on its host (`undo`).
 */
export async function undoFinished(
  record: RolloutRecord,
  finished: readonly RolloutHost[],
  deps: Pick<RolloutDeps, "store" | "swapJobs" | "reports">,
  at: string,
  save: () => Promise<void>,
): Promise<{ waiting: boolean }> {
  const { store } = deps;
  let waiting = false;
  for (const h of finished) {
    if (h.undo?.outcome !== undefined || h.undo?.refused !== undefined) continue;
    waiting = true;
    if (h.undo?.swapId === undefined) {
      const id = newSwapId();
      const target = await rollbackRecord(
        { id, host: h.host, requester: record.requester, channel: record.channel },
        store,
      );
      if (!target.ok) {
        h.undo = { refused: target.why };
        continue;
      }
      const lock = await store.locks.lockHost(h.host, id);
      if (!lock.ok) {
        h.undo = { refused: `${h.host} is held by swap ${lock.holder}` };
        continue;
      }
      h.undo = { swapId: id };
      await save();
      await queueSwap(
        { ...target.record, rollout: { id: record.id, wave: h.wave } },
        `${target.detail}: rollout ${record.id} halted at wave ${h.wave + 1}`,
        { store, swaps: deps.swapJobs, reports: deps.reports },
        true,
      );
      continue;
    }
    const undo = await store.swaps.get(h.undo.swapId);
    if (undo === undefined) {
      // noted, and its queueing never happened (the run died in between): the host is given back
      await store.locks.unlockHost(h.host, h.undo.swapId);
      h.undo = { refused: "its rollback could not be queued" };
      continue;
    }
    if (undo.outcome !== undefined) {
      h.undo.outcome = undo.outcome;
      continue;
    }
    if (h.undo.releasedAt === undefined && planned(undo)) {
      await approveFor(
        store,
        record,
        undo,
        undo.planHash!,
        at,
        `approved ${undo.request.model.repo}'s rollback on ${h.host}: rollout ${record.id} halted`,
      );
      h.undo.releasedAt = at;
      await save();
      await deps.swapJobs.wake(undo.id).catch(() => undefined);
    }
  }
  return { waiting };
}
