import type { App, BlockAction, ButtonAction } from "@slack/bolt";
import { type DecisionDeps, decideSwap } from "./decide-swap.ts";

const APPROVE = new Set(["white_check_mark", "heavy_check_mark"]);
const REJECT = new Set(["x", "negative_squared_cross_mark"]);

/** ✅/❌ reactions on a plan message, and its Approve/Reject buttons. */
export function registerApprovalListeners(app: App, deps: DecisionDeps): void {
  app.event("reaction_added", async ({ event }) => {
    if (event.item.type !== "message") return;
    const approved = APPROVE.has(event.reaction) ? true : REJECT.has(event.reaction) ? false : undefined;
    if (approved === undefined) return;
    const swapId = await planMessageSwap(deps, event.item.channel, event.item.ts);
    if (swapId === undefined) return;
    await decideSwap({ swapId, user: event.user, approved, via: "reaction" }, deps);
  });

  for (const [actionId, approved] of [
    ["swap_approve", true],
    ["swap_reject", false],
  ] as const) {
    app.action<BlockAction<ButtonAction>>(actionId, async ({ ack, body, action }) => {
      await ack();
      if (typeof action.value !== "string" || !/^sw-[a-z0-9-]{1,40}$/.test(action.value)) return;
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
