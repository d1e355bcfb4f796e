import { isoNow } from "../clock.ts";
import type { StageContext } from "../swap/stage-context.ts";
import type { Decision } from "../swap/swap-record.ts";

/*
 * The approval gate, as the pipeline meets it: a plan is put up for a decision (and put up again when it
 * changes, which voids any earlier approval), and the prepare step asks where the decision stands. The
 * decisions themselves are taken in decide.ts (from Slack's reactions and buttons); the plan message is
 * posted by the reporter through post-plan.ts. Nothing on the serving side is touched before approval.
 */

export type GateContext = Pick<StageContext, "swap" | "gate" | "emit" | "clock" | "settings">;

/** How long a rollout's host may wait for its wave to start: a day (the rollout cancels it sooner when it ends). */
export const ROLLOUT_WAVE_WAIT_MINUTES = 24 * 60;

/** Why a plan is put up again, and the plan it replaces. */
export interface Replaces {
  planHash: string;
  /** An approval had been given on the replaced plan: it no longer counts. */
  voided: boolean;
  why: string;
}

/** Opens the approval window for the record's current plan (its planHash) and asks for a decision. */
export function requestApproval(ctx: GateContext, replaces?: Replaces): void {
  const { swap, clock } = ctx;
  const planHash = swap.record.planHash;
  if (planHash === undefined) throw new Error("requestApproval: the swap has no plan");
  const rollout = swap.record.rollout;
  // a rollout's host waits for its wave, however long the waves before it take; the rollout ends it if
  // it never comes (its own approval window is the one people see)
  const minutes = rollout === undefined ? ctx.settings.approvalTtlMinutes : ROLLOUT_WAVE_WAIT_MINUTES;
  const expiresAt = new Date(clock.now() + minutes * 60_000).toISOString();
  swap.set({ approval: { requestedAt: isoNow(clock), expiresAt }, decision: undefined });
  swap.stage(
    "approval",
    "running",
    rollout !== undefined
      ? `waiting for wave ${rollout.wave + 1} of rollout ${rollout.id}${replaces === undefined ? "" : ` (the plan changed: ${replaces.why})`}`
      : replaces === undefined
        ? "waiting for an approver's ✅ on the plan (in the thread)"
        : `the plan changed (${replaces.why}): approval needed again`,
  );
  ctx.emit({
    type: "approval-requested",
    planHash,
    expiresAt,
    ...(replaces === undefined ? {} : { replaces }),
  });
}

export type Verdict =
  | { kind: "waiting" }
  | { kind: "approved"; decision: Decision }
  | { kind: "rejected"; decision: Decision }
  | { kind: "expired" };

/** Where the decision on the current plan stands: decided (first decision wins), expired, or waiting. */
export async function verdict(ctx: GateContext): Promise<Verdict> {
  const { record } = ctx.swap;
  if (record.planHash === undefined || record.approval === undefined) return { kind: "waiting" };
  const decision = await ctx.gate.decision(record.planHash);
  if (decision !== undefined)
    return decision.approved ? { kind: "approved", decision } : { kind: "rejected", decision };
  if (ctx.clock.now() > Date.parse(record.approval.expiresAt)) return { kind: "expired" };
  return { kind: "waiting" };
}
