import type { RolloutHost, RolloutRecord } from "../../src/rollout/rollout-record.ts";
import type { Store } from "../../src/store/store.ts";
import type { SwapRecord } from "../../src/swap/swap-record.ts";

/**
 * Gives the rollout's approval to one of its swaps, on that swap's current plan: recorded as its decision,
 * with its event and audit entry, by the approval store's one decision per plan, so a run that dies
 * before saving what it did and gives it again records nothing new.
 */
export async function approveFor(
  store: Pick<Store, "approvals">,
  record: RolloutRecord,
  swap: SwapRecord,
  planHash: string,
  at: string,
  what: string,
): Promise<void> {
  const decision = record.decision;
  if (decision === undefined)
    throw new Error(`rollout ${record.id} approves ${swap.host} without a decision`);
  await store.approvals.decide(
    swap.id,
    { ...decision, planHash, at },
    { type: "approval-decided", planHash, approved: true, by: decision.by, via: decision.via, at },
    { at, kind: "approval", who: decision.by, host: swap.host, swap: swap.id, detail: what },
  );
}

/**
 * A host's wave started: its swap gets the approval on the plan the rollout's plan was made of, and the
 * host is marked released (`at`); the caller saves that before it wakes the swap.
 */
export async function releaseHost(
  store: Pick<Store, "approvals">,
  record: RolloutRecord,
  h: RolloutHost,
  child: SwapRecord,
  at: string,
): Promise<void> {
  if (h.planHash === undefined) throw new Error(`rollout ${record.id} releases ${h.host} without its plan`);
  const model = `${record.request.model.repo}@${child.plan?.model.sha.slice(0, 7) ?? record.request.model.revision}`;
  await approveFor(
    store,
    record,
    child,
    h.planHash,
    at,
    `approved ${model} in rollout ${record.id} (wave ${h.wave + 1})`,
  );
  h.releasedAt = at;
}

/** A swap waits in prepare with a plan put up: the rollout can take its plan, or approve it. */
export function planned(swap: SwapRecord | undefined): swap is SwapRecord {
  return (
    swap !== undefined &&
    swap.outcome === undefined &&
    swap.step === "prepare" &&
    swap.planHash !== undefined &&
    swap.approval !== undefined
  );
}
