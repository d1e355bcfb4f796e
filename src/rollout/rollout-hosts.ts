import type { SwapRecord } from "../swap/swap-record.ts";
import type { RolloutEvent, RolloutHost, RolloutRecord } from "./rollout-record.ts";

/** What a rollout reads of its hosts' swaps: whether one ended before the decision, and a halt's lists. */

/** A host's swap ended before the rollout's plan was decided (its plan refused, the Hub said no, …): why. */
export function endedEarly(
  record: RolloutRecord,
  children: ReadonlyMap<string, SwapRecord>,
): string | undefined {
  for (const h of record.hosts) {
    const child = children.get(h.swapId);
    if (child === undefined) return `${h.host}'s swap record is gone`;
    if (child.outcome !== undefined)
      return `${h.host}'s swap ended before the rollout's plan was decided: ${child.outcome}${child.reason === undefined ? "" : ` (${child.reason})`}`;
  }
  return undefined;
}

/**
 * The halt's event, once every swap of the halted wave has ended: the earlier waves' hosts that keep the
 * new model, the halted wave's finished hosts (taken back, or not), the hosts never touched.
 */
export function haltedEvent(
  record: RolloutRecord,
  children: ReadonlyMap<string, SwapRecord>,
  finished: readonly RolloutHost[],
  undone: readonly RolloutHost[],
): Extract<RolloutEvent, { type: "halted" }> {
  const wave = record.wave;
  return {
    type: "halted",
    wave,
    reason: record.reason ?? "halted",
    kept: record.hosts
      .filter((h) => h.wave < wave && children.get(h.swapId)?.outcome === "succeeded")
      .map((h) => h.host),
    finished: finished.filter((h) => !undone.includes(h)).map((h) => h.host),
    undone: undone.map((h) => h.host),
    untouched: record.hosts.filter((h) => h.releasedAt === undefined).map((h) => h.host),
    ...(record.cancel === undefined
      ? {}
      : { cancelledBy: record.cancel.by, approved: record.decision?.approved === true }),
  };
}
