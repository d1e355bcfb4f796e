import { type Clock, isoNow } from "../clock.ts";
import { describeError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { escapeMrkdwn } from "../reporter/message.ts";
import type { PlanMessageRef } from "../store/approvals.ts";
import type { Store } from "../store/store.ts";
import type { Decision, SwapRecord } from "../swap/swap-record.ts";

export interface DecideDeps {
  store: Pick<Store, "swaps" | "approvals">;
  /**
   * Whether the user is an approver at the moment of the decision (user groups asked again then). Throws
   * a coded error when that cannot be known (SLACK_GROUP_UNAVAILABLE): the decision then counts for nothing.
   */
  isApprover(user: string): Promise<boolean>;
  allowSelfApproval: boolean;
  /** Wakes the swap's parked job, so it acts on the decision at once. */
  wake(swapId: string): Promise<void>;
  /** Asks the reporter to show the decision on the plan message. */
  reportSoon(swapId: string): Promise<void>;
  /** Says something to one person, privately (an ephemeral message). */
  tell(user: string, text: string): Promise<void>;
  log: Logger;
  clock: Clock;
}

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
  const record = await deps.store.swaps.get(ref.swapId);
  if (record === undefined) return;
  const tell = (text: string) => deps.tell(input.user, text).catch(() => undefined);
  const waiting = record.step === "prepare" && record.outcome === undefined;
  if (!waiting) {
    // a late click on a swap that moved on: said, unless it repeats what this person decided
    const same = record.decision?.by === input.user && record.decision.approved === input.approved;
    if (!same) await tell(`Swap \`${record.id}\` is not waiting for a decision any more: ${where(record)}.`);
    return;
  }
  if (ref.planHash !== record.planHash) {
    await tell(
      `That plan of swap \`${record.id}\` was replaced by a newer one (the plan changed): decide on the newest plan in its thread.`,
    );
    return;
  }
  let approver: boolean;
  try {
    approver = await deps.isApprover(input.user);
  } catch (error) {
    deps.log.warn({ swap: record.id, user: input.user, err: describeError(error) }, "decision not counted");
    await tell(
      `Your decision on swap \`${record.id}\` was not counted: ${escapeMrkdwn(describeError(error))}`,
    );
    return;
  }
  if (!approver) {
    await tell("Only approvers can approve or reject swaps.");
    return;
  }
  if (input.approved && input.user === record.requester && !deps.allowSelfApproval) {
    await tell("You requested this swap, so another approver has to approve it.");
    return;
  }
  if (record.approval !== undefined && deps.clock.now() > Date.parse(record.approval.expiresAt)) {
    await tell(`The approval window of swap \`${record.id}\` has closed.`);
    return;
  }
  const decision: Decision = {
    approved: input.approved,
    by: input.user,
    at: isoNow(deps.clock),
    planHash: ref.planHash,
    via: input.via,
  };
  const model = `${record.request.model.repo}${record.plan === undefined ? "" : `@${record.plan.model.sha.slice(0, 7)}`}`;
  const { recorded, decision: standing } = await deps.store.approvals.decide(
    record.id,
    decision,
    {
      type: "approval-decided",
      planHash: ref.planHash,
      approved: input.approved,
      by: input.user,
      via: input.via,
      at: decision.at,
    },
    {
      at: decision.at,
      kind: input.approved ? "approval" : "rejection",
      who: input.user,
      host: record.host,
      swap: record.id,
      detail: `${input.approved ? "approved" : "rejected"} ${model} by ${input.via}`,
    },
  );
  if (!recorded) {
    if (standing.by !== input.user)
      await tell(
        `Swap \`${record.id}\` is already ${standing.approved ? "approved" : "rejected"} by <@${standing.by}>.`,
      );
    return;
  }
  deps.log.info(
    { swap: record.id, host: record.host, by: input.user, approved: input.approved, via: input.via },
    "swap decision recorded",
  );
  await deps.wake(record.id).catch(() => undefined);
  await deps.reportSoon(record.id).catch(() => undefined);
}

function where(record: SwapRecord): string {
  const decided = record.decision === undefined ? "" : ` by <@${record.decision.by}>`;
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
