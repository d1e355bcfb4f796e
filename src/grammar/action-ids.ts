/** The Approve and Reject buttons on a plan message: their `action_id`s. Each button's value is the swap id. */
export const APPROVE_ACTION_ID = "swap_approve";
export const REJECT_ACTION_ID = "swap_reject";

export const DECISION_ACTIONS = [
  { actionId: APPROVE_ACTION_ID, approved: true },
  { actionId: REJECT_ACTION_ID, approved: false },
] as const;

/** The ✅/❌ reactions that decide a plan (Slack's names for them, with their common look-alikes). */
export const APPROVE_REACTIONS: ReadonlySet<string> = new Set(["white_check_mark", "heavy_check_mark"]);
export const REJECT_REACTIONS: ReadonlySet<string> = new Set(["x", "negative_squared_cross_mark"]);

/** What a reaction decides: true approves, false rejects, undefined is not a decision. */
export function reactionDecision(name: string): boolean | undefined {
  if (APPROVE_REACTIONS.has(name)) return true;
  if (REJECT_REACTIONS.has(name)) return false;
  return undefined;
}
