import type { App, BlockAction, ButtonAction } from "@slack/bolt";
import { type DecideDeps, decide } from "../approval/decide.ts";
import { DECISION_ACTIONS, reactionDecision } from "../grammar/action-ids.ts";
import { isRolloutId } from "../grammar/rollout-id.ts";
import { isSwapId } from "../grammar/swap-id.ts";

/**
 * The approval gate's ears in Slack: ✅/❌ reactions on a plan message and its Approve/Reject buttons,
 * handed to the gate (src/approval/decide.ts) with the message they were given on.
 */
export function registerApprovalListeners(app: App, deps: DecideDeps): void {
  app.event("reaction_added", async ({ event }) => {
    if (event.item.type !== "message") return;
    const approved = reactionDecision(event.reaction);
    if (approved === undefined) return;
    await decide(
      { channel: event.item.channel, messageTs: event.item.ts, user: event.user, approved, via: "reaction" },
      deps,
    );
  });

  for (const { actionId, approved } of DECISION_ACTIONS) {
    app.action<BlockAction<ButtonAction>>(actionId, async ({ ack, body, action }) => {
      await ack();
      const channel = body.channel?.id ?? body.container?.channel_id;
      const messageTs = body.message?.ts ?? body.container?.message_ts;
      if (typeof action.value !== "string" || !(isSwapId(action.value) || isRolloutId(action.value))) return;
      if (typeof channel !== "string" || typeof messageTs !== "string") return;
      await decide(
        { channel, messageTs, user: body.user.id, approved, via: "button", buttonSwapId: action.value },
        deps,
      );
    });
  }
}
