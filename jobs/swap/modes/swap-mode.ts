import type { StageContext, StepResult } from "../../../src/swap/stage-context.ts";
import type { SwapRecord, SwapStep } from "../../../src/swap/swap-record.ts";
import type { Expected } from "../stages/final-check.ts";
import type { RollbackResult } from "../stages/rollback-result.ts";

/**
 * How a swap puts its new unit in production, chosen once from its plan (modeOf): cold (the old unit
 * stops, then the new one starts in its place: behind the front door's hold, or parked instead of
 * stopped, where the plan says) or blue/green (the new unit starts beside the old one, and the front door
 * flips). The pipeline's generic stages (health, sanity, benchmark, the final check) never ask which:
 * everything that differs is here.
 */
export interface SwapMode {
  /** For the log: "cold", "blue/green". */
  readonly name: string;
  /** Stage 7: the new unit starts (in the old one's place, or beside it). */
  start(ctx: StageContext): Promise<StepResult>;
  /** After the sanity check: the new unit takes the requests (the front door's release, or its flip). */
  takeRequests(ctx: StageContext): Promise<StepResult>;
  /**
   * The old unit is let go (blue/green: after the flip-back window; a parked unit: stopped), and only
   * after the new unit passed the final check seconds before.
   */
  retire(ctx: StageContext): Promise<StepResult>;
  /** Puts back what served before, from the switch on (the final check then says whether it serves). */
  undo(ctx: StageContext, why: string): Promise<RollbackResult>;
  /** The step after a gate that passed: the sanity check or the benchmark. */
  after(record: Readonly<SwapRecord>, step: "sanity" | "benchmark"): SwapStep;
  /** When the benchmark runs, for the thread: beside production, reduced beside it, or after the flip. */
  benchmarkWhen(record: Readonly<SwapRecord>): "reduced" | "before-flip" | "after-flip" | undefined;
  /** The new unit as it serves once the swap succeeds: what the final check expects then. */
  newUnit(ctx: Pick<StageContext, "swap" | "host" | "engine" | "previousEngine">): Expected;
  /** The old unit as it serves once the swap is undone. */
  oldUnit(ctx: Pick<StageContext, "swap" | "host" | "engine" | "previousEngine">): Expected;
}

/**
 * The process a unit was last found serving with: the one the final check expects (another means it
 * crashed and was restarted). The old unit, never restarted by this swap, keeps its process from before
 * the switch (a blue/green swap's, or a parked one woken).
 */
export function lastSeenPid(record: Readonly<SwapRecord>, unit: string): number | undefined {
  if (record.verified?.unit === unit) return record.verified.mainPid;
  if (unit === record.previous?.unit && record.switch?.oldMainPid !== 0) return record.switch?.oldMainPid;
  return undefined;
}
