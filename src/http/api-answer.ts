import { isRolloutId, ROLLOUT_ID_EXAMPLE } from "../grammar/rollout-id.ts";
import { isSwapId, SWAP_ID_EXAMPLE } from "../grammar/swap-id.ts";
import type { ApiError } from "./ops-auth.ts";

/** What a route answers: its status and JSON body. */
export type Answer = { status: number; body: unknown };

/** A refusal: `{"error": {"code", "message", "fix"}}`. */
export function error(status: number, code: string, message: string, fix: string): Answer {
  const body: { error: ApiError } = { error: { code, message, fix } };
  return { status, body };
}

/**
 * Undefined for a swap's or a rollout's id; else the 400 that says what ids look like. `message` names
 * what was wrong, `more` is added to the fix.
 */
export function unlessAnId(text: string, message: string, more = ""): Answer | undefined {
  if (isSwapId(text) || isRolloutId(text)) return undefined;
  return error(
    400,
    "INPUT_INVALID",
    message,
    `swap ids look like ${SWAP_ID_EXAMPLE}, rollout ids like ${ROLLOUT_ID_EXAMPLE}${more}`,
  );
}
