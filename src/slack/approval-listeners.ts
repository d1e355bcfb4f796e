import type { App, BlockAction, ButtonAction } from "@slack/bolt";
import { DECISION_ACTIONS, reactionDecision } from "../grammar/action-ids.ts";
import { isSwapId } from "../grammar/swap-id.ts";
import { type DecisionDeps, decideSwap } from "./decide-swap.ts";

/** ✅/❌ reactions on a plan message, and its Approve/Reject buttons. */
export function registerApprovalListeners(app: App, deps: DecisionDeps): void {
  app.event("reaction_added", async ({ event }) => {
    if (event.item.type !== "message") return;
    const approved = reactionDecision(event.reaction);
    if (approved === undefined) return;
    const swapId = await planMessageSwap(deps, event.item.channel, event.item.ts);
    if (swapId === undefined) return;
    await decideSwap({ swapId, user: event.user, approved, via: "reaction" }, deps);
  });

  for (const { actionId, approved } of DECISION_ACTIONS) {
    app.action<BlockAction<ButtonAction>>(actionId, async ({ ack, body, action }) => {
      await ack();
      if (typeof action.value !== "string" || !isSwapId(action.value)) return;
      await decideSwap({ swapId: action.value, user: body.user.id, approved, via: "button" }, deps);
    });
  }
}

/**
 * The swap a plan message belongs to. The index is written right after the plan is posted, so a
 * reaction that arrives within those milliseconds looks again briefly instead of being lost.
 */
async function planMessageSwap(deps: DecisionDeps, channel: string, ts: string): Promise<string | undefined> {
  for (let attempt = 0; attempt < 10; attempt++) {
    const swapId = await deps.store.swapForPlanMessage(channel, ts);
    if (swapId !== undefined) return swapId;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return undefined;
}
