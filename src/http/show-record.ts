import { isRolloutId } from "../grammar/rollout-id.ts";
import { plainText } from "../reporter/plain-text.ts";
import { renderPlan } from "../reporter/plan-message.ts";
import { renderRolloutPlan } from "../reporter/rollout-messages.ts";
import type { Store } from "../store/store.ts";
import type { SwapRecord } from "../swap/swap-record.ts";
import { type Answer, error, unlessAnId } from "./api-answer.ts";

/**
 * `GET /api/swaps/<id>`: a swap, or a rollout (`ro-…`), with its plan as Slack shows it to approvers, in
 * plain text for a terminal. A rollout comes with a line per host: its wave, its swap, where it is.
 */
export async function showRecord(id: string, store: Pick<Store, "swaps" | "rollouts">): Promise<Answer> {
  const bad = unlessAnId(id, "not a swap or rollout id", "; GET /api/history lists the swaps");
  if (bad !== undefined) return bad;
  if (isRolloutId(id)) return await showRollout(id, store);
  const record = await store.swaps.get(id);
  if (record === undefined)
    return error(404, "SWAP_NOT_FOUND", `there is no swap ${id}`, "GET /api/history lists the swaps");
  const planText =
    record.plan === undefined
      ? undefined
      : plainText(
          renderPlan(record.plan, {
            swapId: record.id,
            requester: record.requester,
            status:
              record.decision !== undefined
                ? record.decision.approved
                  ? "approved"
                  : "rejected"
                : "awaiting-approval",
            ...(record.decision === undefined ? {} : { decidedBy: record.decision.by }),
          }),
        );
  return { status: 200, body: { swap: record, ...(planText === undefined ? {} : { planText }) } };
}

async function showRollout(id: string, store: Pick<Store, "swaps" | "rollouts">): Promise<Answer> {
  const record = await store.rollouts.get(id);
  if (record === undefined)
    return error(
      404,
      "SWAP_NOT_FOUND",
      `there is no rollout ${id}`,
      "its id is on its card in Slack; a finished rollout is kept as long as retention.finishedDays says",
    );
  const children = new Map<string, SwapRecord | undefined>();
  for (const h of record.hosts) children.set(h.swapId, await store.swaps.get(h.swapId));
  const hosts = record.hosts.map((h) => {
    const child = children.get(h.swapId);
    return {
      host: h.host,
      wave: h.wave,
      swap: h.swapId,
      step: child?.step ?? "gone",
      ...(child?.outcome === undefined ? {} : { outcome: child.outcome }),
      ...(child?.peerCopy === undefined ? {} : { files: child.peerCopy }),
    };
  });
  const planText =
    record.planHash === undefined
      ? undefined
      : plainText(
          renderRolloutPlan(record, children, {
            awaiting: record.decision === undefined && record.outcome === undefined,
            ...(record.decision === undefined
              ? {}
              : {
                  decided: `${record.decision.approved ? "✅ Approved" : "❌ Rejected"} by ${record.decision.by}`,
                }),
          }),
        );
  return { status: 200, body: { rollout: record, hosts, ...(planText === undefined ? {} : { planText }) } };
}
