import { newStages, type SwapRecord } from "../swap/swap-record.ts";
import type { Store } from "./store.ts";

/** A swap back to what a host served before its last swap, or why there is none. */
export type RollbackTarget =
  | {
      ok: true;
      record: SwapRecord;
      /** Its audit line: `rollback to sglang-old.service`, `rollback to org/model@0123abc`. */
      detail: string;
      /** Set when the last swap loaded a new revision in place: the revision to load back. */
      inPlace?: { model: string; unit: string };
      /** The unit it goes back to. */
      unit: string;
    }
  | { ok: false; why: string };

/**
 * The swap `/llm rollback` (and a halted rollout's undo) queues: back to the unit that served before the
 * host's last swap, whose unit file and model files are still there; after a swap that loaded a new
 * revision in place (the same unit serves it), a swap to the revision before, loaded in place again.
 */
export async function rollbackRecord(
  who: { id: string; host: string; requester: string; channel: string },
  store: Pick<Store, "hosts" | "swaps">,
): Promise<RollbackTarget> {
  const { id, host, requester, channel } = who;
  const serving = await store.hosts.serving(host);
  const previous = serving?.previous;
  if (previous === undefined)
    return {
      ok: false,
      why: `Nothing to roll back to: no swap has changed what *${host}* serves yet (it serves the unit from the config).`,
    };
  const base = {
    id,
    host,
    requester,
    channel,
    createdAt: new Date().toISOString(),
    stages: newStages(),
    tasks: {},
  };
  const back = previous.unit === serving?.unit && previous.repo !== undefined ? previous.sha : undefined;
  if (back !== undefined) {
    const model = { repo: previous.repo!, revision: back };
    const servedBy =
      serving?.swapId === undefined
        ? undefined
        : (await store.swaps.get(serving.swapId).catch(() => undefined))?.plan?.engine?.commit;
    return {
      ok: true,
      record: {
        ...base,
        request: {
          model,
          host,
          tp: undefined,
          dryRun: false,
          ...(servedBy === undefined ? {} : { engineRef: servedBy }),
        },
        step: "resolve",
      },
      detail: `rollback to ${model.repo}@${back.slice(0, 7)}`,
      inPlace: { model: `${model.repo}@${back.slice(0, 7)}`, unit: previous.unit },
      unit: previous.unit,
    };
  }
  const earlier = (await store.swaps.history({ host, limit: 50 })).records.find(
    (r) => r.outcome === "succeeded" && r.plan?.unitName === previous.unit,
  );
  return {
    ok: true,
    record: {
      ...base,
      request: {
        model: { repo: previous.repo ?? earlier?.plan?.model.repo ?? previous.unit, revision: "rollback" },
        host,
        tp: undefined,
        dryRun: false,
        engineRef: "main",
      },
      rollbackTo: { unit: previous.unit, ...(earlier === undefined ? {} : { swapId: earlier.id }) },
      step: "preflight",
    },
    detail: `rollback to ${previous.unit}`,
    unit: previous.unit,
  };
}
