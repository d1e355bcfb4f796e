import type { RolloutHost, RolloutRecord } from "../../src/rollout/rollout-record.ts";
import type { Store } from "../../src/store/store.ts";
import type { SwapRecord } from "../../src/swap/swap-record.ts";

/**
 * Gives the rollout's approval to one host's swap, on that swap's plan (the one the rollout's plan was
 * made of): recorded as its decision, with its event and audit entry, by the approval store's one
 * decision per plan, so a run that dies before saving the host as released and gives it again records
 * nothing new. Marks the host released (`at`); the caller saves that before it wakes the swap.
 */
export async function releaseHost(
  store: Pick<Store, "approvals">,
  record: RolloutRecord,
  h: RolloutHost,
  child: SwapRecord,
  at: string,
): Promise<void> {
  const decision = record.decision;
  if (decision === undefined || h.planHash === undefined)
    throw new Error(`rollout ${record.id} releases ${h.host} without an approved plan`);
  const model = `${record.request.model.repo}@${child.plan?.model.sha.slice(0, 7) ?? record.request.model.revision}`;
  await store.approvals.decide(
    child.id,
    { ...decision, planHash: h.planHash, at },
    {
      type: "approval-decided",
      planHash: h.planHash,
      approved: true,
      by: decision.by,
      via: decision.via,
      at,
    },
    {
      at,
      kind: "approval",
      who: decision.by,
      host: h.host,
      swap: child.id,
      detail: `approved ${model} in rollout ${record.id} (wave ${h.wave + 1})`,
    },
  );
  h.releasedAt = at;
}
