import type { StepResult } from "../../../src/swap/stage-context.ts";
import { newUnitPort, oldUnitPort } from "../../../src/swap/unit-ports.ts";
import { finalCheck } from "../stages/final-check.ts";
import { coldSlots, releaseStage } from "../stages/front-door.ts";
import { isParked, stopParked } from "../stages/park.ts";
import { undoCold } from "../stages/rollback.ts";
import { switchStage } from "../stages/switch.ts";
import { lastSeenPid, type SwapMode } from "./swap-mode.ts";

/**
 * A cold swap: the old unit stops (or is parked, where the plan says: park.ts), then the new one starts
 * in its place, on the serving port. Behind a front door, new requests are held meanwhile and released to
 * the new unit once it is healthy and sane (front-door.ts). Its retire step stops a parked old unit, once
 * the new one passed the final check; its undo starts (or wakes) the old unit again.
 */
export const coldMode: SwapMode = {
  name: "cold",
  start: (ctx) => switchStage(ctx),
  takeRequests: (ctx) => releaseStage(ctx),
  async retire(ctx): Promise<StepResult> {
    if (!isParked(ctx.swap.record)) return { next: "finish" };
    // the parked unit is the way back: it is let go only for a new unit that serves, seen just now
    const seen = await finalCheck(ctx, coldMode.newUnit(ctx));
    if (!seen.ok) {
      ctx.swap.to.checked(seen);
      return {
        fail: `the last check before stopping the parked unit found: ${seen.detail}`,
        touched: true,
        code: "HEALTH_FAILED",
        fix: `the journal of ${seen.unit} (journalctl -u ${seen.unit}) says why; the parked model is woken instead`,
      };
    }
    await stopParked(ctx);
    return { next: "finish" };
  },
  undo: (ctx, why) => undoCold(ctx, why),
  after: (_record, step) => (step === "sanity" ? "release" : "retire"),
  benchmarkWhen: () => undefined,
  newUnit(ctx) {
    const { record } = ctx.swap;
    const plan = record.plan!;
    const fd = ctx.host.frontDoor;
    return {
      unit: plan.unitName,
      port: newUnitPort(plan, ctx.host.config.servingPort),
      engine: ctx.engine,
      mainPid: lastSeenPid(record, plan.unitName),
      ...(fd === undefined ? {} : { slot: coldSlots(ctx, fd).to }),
    };
  },
  oldUnit(ctx) {
    const { record } = ctx.swap;
    const unit = record.previous!.unit;
    const fd = ctx.host.frontDoor;
    return {
      unit,
      port: oldUnitPort(record, ctx.host.config.servingPort),
      engine: ctx.previousEngine,
      mainPid: lastSeenPid(record, unit),
      ...(fd === undefined ? {} : { slot: coldSlots(ctx, fd).from }),
    };
  },
};
