import type { SlackMessage } from "../slack/blocks.ts";
import type { StoredSwapEvent } from "../swap/swap-events.ts";
import type { SwapRecord } from "../swap/swap-record.ts";
import { renderPlanDetails } from "./plan-details.ts";
import { type PlanStatus, renderPlan } from "./plan-message.ts";

/** What the reporter lends the gate to show plans in the swap's thread. */
export interface PlanOutlet {
  /** Posts into the swap's thread; returns the message's ts. */
  post(message: SlackMessage): Promise<string>;
  /** Posts the plan's details (its checks' figures, flags' reasons, unit diff) under it; once per event. */
  postDetails(message: SlackMessage): Promise<void>;
  update(ts: string, message: SlackMessage): Promise<void>;
  /** The bot's own ✅/❌, so people can click them; best effort. */
  react(ts: string, name: string): Promise<void>;
  /** Takes them back once the plan is decided (or replaced, expired, cancelled); best effort. */
  unreact(ts: string, name: string): Promise<void>;
  /** Remembers which plan a message shows (decide.ts binds decisions to it). */
  index(ts: string, planHash: string): Promise<void>;
  /** Says something in the thread (a plain line). */
  say(text: string): Promise<void>;
  /** Keeps what `plans` says now, at once: a plan posted is never posted again by a reporter that died. */
  remember(): Promise<void>;
}

/** Plan hash → the message showing that plan, as the reporter keeps it. */
export type PlanMessages = Record<string, string>;

export type ApprovalEvent = Extract<
  StoredSwapEvent,
  { type: "planned" | "approval-requested" | "approval-decided" | "approval-closed" }
>;

export function isApprovalEvent(event: StoredSwapEvent): event is ApprovalEvent {
  return (
    event.type === "planned" ||
    event.type === "approval-requested" ||
    event.type === "approval-decided" ||
    event.type === "approval-closed"
  );
}

/**
 * Shows an approval event in Slack: a plan put up for a decision is posted with its Approve/Reject
 * buttons and the bot's ✅/❌ and indexed; a replaced plan's message says it counts for nothing any more;
 * a decision, an expiry or a cancel is shown on the plan it was about; a dry run or a refused plan is
 * posted (or its message updated) as such. `plans` is updated in place as messages are posted.
 */
export async function postPlanEvent(
  event: ApprovalEvent,
  record: SwapRecord,
  plans: PlanMessages,
  outlet: PlanOutlet,
  approvers = "an approver",
): Promise<void> {
  const plan = record.plan;
  if (plan === undefined) return;
  const render = (status: PlanStatus, decidedBy?: string) =>
    renderPlan(plan, {
      swapId: record.id,
      requester: record.requester,
      status,
      ...(decidedBy === undefined ? {} : { decidedBy }),
      ...(status === "awaiting-approval"
        ? {
            waitingFor: approvers,
            ...(record.approval === undefined ? {} : { expiresAt: record.approval.expiresAt }),
          }
        : {}),
    });
  const latest = Object.values(plans).at(-1);
  switch (event.type) {
    case "planned": {
      const ts = plans[event.planHash] ?? (event.status === "refused" ? latest : undefined);
      if (ts !== undefined) await outlet.update(ts, render(event.status));
      else {
        plans[event.planHash] = await outlet.post(render(event.status));
        await outlet.remember();
      }
      // once per event (the outlet's key): a dry run's, or a refused plan's that was never put up before
      if (event.status === "dry-run" || ts === undefined)
        await outlet.postDetails(renderPlanDetails(plan, record.id));
      return;
    }
    case "approval-requested": {
      if (event.replaces !== undefined) {
        const old = plans[event.replaces.planHash];
        if (old !== undefined && old !== plans[event.planHash]) {
          await outlet.update(old, render("replaced"));
          await withdrawHelpers(outlet, old);
        }
      }
      let ts = plans[event.planHash];
      if (ts === undefined) {
        ts = await outlet.post(render("awaiting-approval"));
        plans[event.planHash] = ts;
        await outlet.remember();
      }
      // indexed first: a ✅ given while the details post is counted (decide.ts finds the plan by its message)
      await outlet.index(ts, event.planHash);
      // once per event (the outlet's key), so a reporter that died between the two posts still posts it
      await outlet.postDetails(renderPlanDetails(plan, record.id));
      if (event.replaces !== undefined) {
        await outlet.say(
          `⚠️ The plan changed (${event.replaces.why})${event.replaces.voided ? "; the earlier approval is void" : ""}. Please review the new plan above.`,
        );
      }
      await outlet.react(ts, "white_check_mark");
      await outlet.react(ts, "x");
      return;
    }
    case "approval-decided": {
      // a decision on the plan that is current now; one on a replaced plan was never recorded
      const ts = plans[event.planHash];
      if (ts !== undefined) {
        await outlet.update(ts, render(event.approved ? "approved" : "rejected", event.by));
        await withdrawHelpers(outlet, ts);
      }
      return;
    }
    case "approval-closed": {
      const ts = plans[event.planHash];
      if (ts !== undefined) {
        await outlet.update(ts, render(event.why, event.by));
        await withdrawHelpers(outlet, ts);
      }
      return;
    }
  }
}

/** A decided plan does not read "❌ 1 (@modelswap)": the bot's own ✅/❌ go; people's stay. */
async function withdrawHelpers(outlet: PlanOutlet, ts: string): Promise<void> {
  await outlet.unreact(ts, "white_check_mark");
  await outlet.unreact(ts, "x");
}
