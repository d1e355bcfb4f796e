import { isoNow } from "../clock.ts";
import { describeError } from "../errors.ts";
import { escapeMrkdwn } from "../escape-mrkdwn.ts";
import { by } from "../grammar/person.ts";
import { isRolloutId } from "../grammar/rollout-id.ts";
import type { PlanMessageRef } from "../store/approvals.ts";
import type { Decision, SwapRecord } from "../swap/swap-record.ts";
import { rolloutSubject } from "./decide-rollout.ts";
import type { DecideDeps, DecisionResult, DecisionSubject, PlanDecision } from "./decision-types.ts";

export type { DecideDeps, DecisionResult, PlanDecision };

/** A ✅/❌ reaction or an Approve/Reject click, as Slack delivered it (all of it untrusted). */
export interface DecisionInput {
  channel: string;
  /** The message reacted on or clicked in: a decision counts for the plan that message shows. */
  messageTs: string;
  user: string;
  approved: boolean;
  via: "reaction" | "button";
  /** A button's value (the swap id the bot put there), checked against the message's own swap. */
  buttonSwapId?: string;
}

/**
 * An approver's decision on a plan. It counts only on the message that shows the swap's current plan
 * (a ✅ on a plan that was replaced approves nothing), only from an approver, not from the requester
 * unless the config allows it, and only while the approval window is open; the first decision on a
 * plan stands (Slack's retries, double clicks and two approvers at once record one). The decision is
 * stored with its event and audit entry, the swap is woken, and the reporter shows it on the plan.
 * People whose reaction or click counts for nothing are told why, privately.
 */
export async function decide(input: DecisionInput, deps: DecideDeps): Promise<void> {
  const ref = await planMessage(deps, input.channel, input.messageTs);
  if (ref === undefined) return; // not a plan message: a reaction on anything else means nothing here
  if (input.buttonSwapId !== undefined && input.buttonSwapId !== ref.swapId) {
    deps.log.warn(
      { swap: ref.swapId, value: input.buttonSwapId },
      "a button's value is not its message's swap: ignored",
    );
    return;
  }
  const result = await decideOnPlan(
    {
      swapId: ref.swapId,
      planHash: ref.planHash,
      user: input.user,
      approved: input.approved,
      via: input.via,
    },
    deps,
  );
  if (!result.ok && result.quiet !== true) await deps.tell(input.user, result.text).catch(() => undefined);
}

/**
 * The approval gate's one decision: checks the swap (or rollout) waits for one on this plan, that the user
 * is an approver now, not its requester (unless the config allows it; `sameAs` knows an operator and their
 * Slack id for one person) and that the window is open; records the first decision with its event and
 * audit entry, wakes the swap and asks the reporter to show it. Slack's reactions and buttons, the CLI
 * and the HTTP API all come here.
 */
export async function decideOnPlan(input: PlanDecision, deps: DecideDeps): Promise<DecisionResult> {
  if (isRolloutId(input.swapId)) {
    const rollout = await deps.store.rollouts.get(input.swapId);
    if (rollout === undefined)
      return { ok: false, code: "SWAP_NOT_FOUND", text: `There is no rollout \`${input.swapId}\`.` };
    return await decideOn(rolloutSubject(rollout), input, deps);
  }
  const record = await deps.store.swaps.get(input.swapId);
  if (record === undefined)
    return { ok: false, code: "SWAP_NOT_FOUND", text: `There is no swap \`${input.swapId}\`.` };
  if (record.rollout !== undefined)
    return {
      ok: false,
      code: "IN_ROLLOUT",
      text: `Swap \`${record.id}\` is one host of rollout \`${record.rollout.id}\`: it starts when its wave does. Decide on the rollout's plan, in the rollout's thread.`,
    };
  return await decideOn(swapSubject(record), input, deps);
}

/** A swap as the gate's rules see it. */
function swapSubject(record: SwapRecord): DecisionSubject {
  const waiting = record.step === "prepare" && record.outcome === undefined && record.approval !== undefined;
  const model = `${record.request.model.repo}${record.plan === undefined ? "" : `@${record.plan.model.sha.slice(0, 7)}`}`;
  return {
    noun: "swap",
    id: record.id,
    requester: record.requester,
    host: record.host,
    planHash: record.planHash,
    expiresAt: record.approval?.expiresAt,
    decision: record.decision,
    notWaiting: waiting
      ? undefined
      : `is not waiting for a decision${record.outcome === undefined && record.decision === undefined ? " yet" : " any more"}: ${where(record)}`,
    replacedBecause: "the plan changed",
    auditDetail: (approved, via) =>
      `${approved ? "approved" : "rejected"} ${model} by ${via}, swap requested by ${record.requester}`,
  };
}

/**
 * The rules themselves, for a swap or a rollout (src/approval/decide-rollout.ts): it waits for a decision
 * on this plan, the user is an approver now and, to approve, not its requester, the window is open; the
 * first decision on a plan stands.
 */
async function decideOn(
  subject: DecisionSubject,
  input: PlanDecision,
  deps: DecideDeps,
): Promise<DecisionResult> {
  const { noun, id } = subject;
  const Noun = `${noun[0]!.toUpperCase()}${noun.slice(1)}`;
  if (subject.notWaiting !== undefined) {
    // a late click on a swap that moved on: said, unless it repeats what this person decided
    const same = subject.decision?.by === input.user && subject.decision.approved === input.approved;
    return {
      ok: false,
      code: "NOT_WAITING",
      text: `${Noun} \`${id}\` ${subject.notWaiting}.`,
      ...(same ? { quiet: true } : {}),
    };
  }
  if (input.planHash !== subject.planHash) {
    return {
      ok: false,
      code: "PLAN_CHANGED",
      text: `That plan of ${noun} \`${id}\` was replaced by a newer one (${subject.replacedBecause}): decide on the newest plan${input.via === "api" ? ` (${subject.planHash ?? "none yet"})` : " in its thread"}.`,
    };
  }
  let approver: boolean;
  try {
    approver = await deps.isApprover(input.user);
  } catch (error) {
    deps.log.warn({ [noun]: id, user: input.user, err: describeError(error) }, "decision not counted");
    return { ok: false, code: "APPROVER_UNCHECKED", text: notCountedReply(noun, id, error) };
  }
  if (!approver)
    return { ok: false, code: "NOT_APPROVER", text: `Only approvers can approve or reject ${noun}s.` };
  const own = input.user === subject.requester || (deps.sameAs?.(input.user, subject.requester) ?? false);
  if (input.approved && own && !deps.allowSelfApproval()) {
    return {
      ok: false,
      code: "OWN_SWAP",
      text: `You requested this ${noun}, so another approver has to approve it.`,
    };
  }
  if (subject.expiresAt !== undefined && deps.clock.now() > Date.parse(subject.expiresAt)) {
    return {
      ok: false,
      code: "APPROVAL_EXPIRED",
      text: `The approval window of ${noun} \`${id}\` has closed.`,
    };
  }
  const decision: Decision = {
    approved: input.approved,
    by: input.user,
    at: isoNow(deps.clock),
    planHash: input.planHash,
    via: input.via,
  };
  const { recorded, decision: standing } = await deps.store.approvals.decide(
    id,
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
      ...(subject.host === undefined ? {} : { host: subject.host }),
      swap: id,
      detail: subject.auditDetail(input.approved, input.via),
    },
  );
  if (!recorded) {
    return {
      ok: false,
      code: "ALREADY_DECIDED",
      text: `${Noun} \`${id}\` is already ${standing.approved ? "approved" : "rejected"}${by(standing.by)}.`,
      ...(standing.by === input.user ? { quiet: true } : {}),
    };
  }
  deps.log.info(
    { [noun]: id, host: subject.host, by: input.user, approved: input.approved, via: input.via },
    `${noun} decision recorded`,
  );
  await deps.wake(id).catch(() => undefined);
  await deps.reportSoon(id).catch(() => undefined);
  return { ok: true, decision };
}

function where(record: SwapRecord): string {
  const decided = record.decision === undefined ? "" : by(record.decision.by);
  switch (record.outcome) {
    case undefined:
      return record.decision?.approved
        ? `it was approved${decided} and is at stage *${record.step}*`
        : `it is at stage *${record.step}*`;
    case "rejected":
      return `it was rejected${decided}`;
    case "rolled_back":
      return "it was rolled back";
    default:
      return `it ${record.outcome === "planned" ? "was a dry run" : `ended: ${record.outcome}`}`;
  }
}

/**
 * The plan a message shows. The reporter indexes a plan message right after Slack accepted it, so a
 * reaction that arrives within those milliseconds looks again briefly instead of being lost.
 */
async function planMessage(
  deps: DecideDeps,
  channel: string,
  ts: string,
): Promise<PlanMessageRef | undefined> {
  for (let attempt = 0; attempt < 10; attempt++) {
    const ref = await deps.store.approvals.planMessage(channel, ts);
    if (ref !== undefined) return ref;
    await deps.clock.sleep(200);
  }
  return undefined;
}

/**
 * The private reply to a decision that could not be counted (who may approve could not be asked): the
 * error's own words, escaped, so nothing in them mentions or links anyone.
 */
function notCountedReply(noun: string, id: string, error: unknown): string {
  return `Your decision on ${noun} \`${id}\` was not counted: ${escapeMrkdwn(describeError(error))}`;
}
