import type { SwapRecord } from "./swap-record.ts";

/**
 * Whether a swap's post, or the reporter's look at it, goes ahead of other swaps' progress when Slack's
 * pace makes them queue (`base`: its card, a plan, what an ended swap still has to say). Never for a
 * rollout's host: the channel waits for the rollout's own card, plan and lines, which are urgent; its
 * hosts' details may trail them.
 */
export function urgentFor(record: Pick<SwapRecord, "rollout">, base: boolean): boolean {
  return base && record.rollout === undefined;
}
