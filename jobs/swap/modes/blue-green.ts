import { pastFlipBack } from "../../../src/swap/flip-back.ts";
import type { SwapRecord } from "../../../src/swap/swap-record.ts";
import { newUnitPort, oldUnitPort } from "../../../src/swap/unit-ports.ts";
import {
  blueGreenOf,
  bringBackRetired,
  flipStage,
  retireStage,
  slotsOf,
  startBeside,
  undoBlueGreen,
} from "../stages/blue-green.ts";
import { lastSeenPid, type SwapMode } from "./swap-mode.ts";

/**
 * A blue/green swap (docs/front-door.md): the new unit starts beside the old one, on GPUs and a port of
 * its own, behind the front door's standby slot; health, sanity and (on spare GPUs) the benchmark run
 * against it there; then the front door flips. The old unit stays loaded for the flip-back window and is
 * stopped after it, once the new unit passed the final check; a restart at full memory may follow
 * (restart-full-memory.ts). Its undo flips back to the old unit while it is loaded, and starts it again
 * once it was stopped.
 */
export const blueGreenMode: SwapMode = {
  name: "blue/green",
  async start(ctx) {
    return await startBeside(ctx, blueGreenOf(ctx.swap.record.plan)!);
  },
  takeRequests: (ctx) => flipStage(ctx, blueGreenMode.newUnit(ctx)),
  retire: (ctx) => retireStage(ctx, blueGreenMode.newUnit(ctx)),
  async undo(ctx, why) {
    // its old unit stopped after the window: started again, not flipped back to
    if (pastFlipBack(ctx.swap.record)) return await bringBackRetired(ctx, why);
    return await undoBlueGreen(ctx, why, blueGreenMode.oldUnit(ctx));
  },
  after(record, step) {
    if (step === "sanity")
      return blueGreenOf(record.plan)?.benchmark === "after-flip" ? "release" : "benchmark";
    return record.flip === undefined ? "release" : "retire";
  },
  benchmarkWhen(record: Readonly<SwapRecord>) {
    if (blueGreenOf(record.plan)?.benchmark === "reduced" && record.flip === undefined) return "reduced";
    return record.flip === undefined ? "before-flip" : "after-flip";
  },
  newUnit(ctx) {
    const { record } = ctx.swap;
    const plan = record.plan!;
    return {
      unit: plan.unitName,
      port: newUnitPort(plan, ctx.host.config.servingPort),
      engine: ctx.engine,
      mainPid: lastSeenPid(record, plan.unitName),
      slot: slotsOf(ctx).to,
    };
  },
  oldUnit(ctx) {
    const { record } = ctx.swap;
    const unit = record.previous!.unit;
    return {
      unit,
      port: oldUnitPort(record, ctx.host.config.servingPort),
      engine: ctx.previousEngine,
      mainPid: lastSeenPid(record, unit),
      slot: slotsOf(ctx).from,
    };
  },
};
