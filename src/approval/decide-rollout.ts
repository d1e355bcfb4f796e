import { isoNow } from "../clock.ts";
import { describeError } from "../errors.ts";
import { escapeMrkdwn } from "../escape-mrkdwn.ts";
import { by } from "../grammar/person.ts";
import type { Decision } from "../swap/swap-record.ts";
import type { DecideDeps, DecisionResult, PlanDecision } from "./decision-types.ts";

/**
 * A decision on a rollout's plan (one plan for all its hosts): the same rules as a swap's (src/approval/
 * decide.ts), against the rollout's record: it waits for one on this plan, from an approver who did not
 * request it (unless the config allows it), within its window; the first decision stands. The rollout
 * gives it to each host's swap when that host's wave starts.
 */
export async function decideOnRollout(input: PlanDecision, deps: DecideDeps): Promise<DecisionResult> {
  const record = await deps.store.rollouts.get(input.swapId);
  if (record === undefined)
    return { ok: false, code: "SWAP_NOT_FOUND", text: `There is no rollout \`${input.swapId}\`.` };
  if (record.step !== "approval" || record.outcome !== undefined || record.approval === undefined) {
    const same = record.decision?.by === input.user && record.decision.approved === input.approved;
    return {
      ok: false,
      code: "NOT_WAITING",
      text: `Rollout \`${record.id}\` is not waiting for a decision${record.outcome === undefined ? (record.decision === undefined ? " yet: its hosts are still planning" : ` any more: it is at wave ${record.wave + 1}`) : ` any more: it ended ${record.outcome}`}.`,
      ...(same ? { quiet: true } : {}),
    };
  }
  if (input.planHash !== record.planHash)
    return {
      ok: false,
      code: "PLAN_CHANGED",
      text: `That plan of rollout \`${record.id}\` was replaced by a newer one (a host's plan changed): decide on the newest plan in its thread.`,
    };
  let approver: boolean;
  try {
    approver = await deps.isApprover(input.user);
  } catch (error) {
    deps.log.warn(
      { rollout: record.id, user: input.user, err: describeError(error) },
      "decision not counted",
    );
    return {
      ok: false,
      code: "APPROVER_UNCHECKED",
      text: `Your decision on rollout \`${record.id}\` was not counted: ${escapeMrkdwn(describeError(error))}`,
    };
  }
  if (!approver)
    return { ok: false, code: "NOT_APPROVER", text: "Only approvers can approve or reject rollouts." };
  const own = input.user === record.requester || (deps.sameAs?.(input.user, record.requester) ?? false);
  if (input.approved && own && !deps.allowSelfApproval())
    return {
      ok: false,
      code: "OWN_SWAP",
      text: "You requested this rollout, so another approver has to approve it.",
    };
  if (deps.clock.now() > Date.parse(record.approval.expiresAt))
    return {
      ok: false,
      code: "APPROVAL_EXPIRED",
      text: `The approval window of rollout \`${record.id}\` has closed.`,
    };
  const decision: Decision = {
    approved: input.approved,
    by: input.user,
    at: isoNow(deps.clock),
    planHash: input.planHash,
    via: input.via,
  };
  const hosts = record.hosts.map((h) => h.host).join(", ");
  const { recorded, decision: standing } = await deps.store.approvals.decide(
    record.id,
    decision,
    {
      type: "approval-decided",
      planHash: input.planHash,
      approved: input.approved,
      by: input.user,
      via: input.via,
      at: decision.at,
    },
    {
      at: decision.at,
      kind: input.approved ? "approval" : "rejection",
      who: input.user,
      swap: record.id,
      detail: `${input.approved ? "approved" : "rejected"} the rollout of ${record.request.model.repo} to ${hosts} by ${input.via}, requested by ${record.requester}`,
    },
  );
  if (!recorded)
    return {
      ok: false,
      code: "ALREADY_DECIDED",
      text: `Rollout \`${record.id}\` is already ${standing.approved ? "approved" : "rejected"}${by(standing.by)}.`,
      ...(standing.by === input.user ? { quiet: true } : {}),
    };
  deps.log.info(
    { rollout: record.id, by: input.user, approved: input.approved, via: input.via },
    "rollout decision recorded",
  );
  await deps.wake(record.id).catch(() => undefined);
  await deps.reportSoon(record.id).catch(() => undefined);
  return { ok: true, decision };
}
