import { newUnitPort } from "../../../src/swap/unit-ports.ts";
import { coldSlots } from "../stages/front-door.ts";
import { loadInPlace, takeInPlace, undoInPlace } from "../stages/in-place.ts";
import { lastSeenPid, type SwapMode } from "./swap-mode.ts";

/**
 * A new revision loaded into the running engine (stages/in-place.ts): the unit keeps its process, and the
 * new weights are checked in it as a new unit would be (health, sanity, then the benchmark once the held
 * requests were released); its file gets the new model path before they are. Nothing to retire: nothing
 * else ran. Its undo loads the old weights back (or restarts the unit from its file).
 */
export const inPlaceMode: SwapMode = {
  name: "in place",
  start: (ctx) => loadInPlace(ctx),
  takeRequests: (ctx) => takeInPlace(ctx),
  retire: async () => ({ next: "finish" }),
  undo: (ctx, why) => undoInPlace(ctx, why),
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
      // the process that served the old weights, unless a check since saw another
      mainPid: lastSeenPid(record, plan.unitName) ?? record.switch?.oldMainPid,
      modelDir: plan.modelDir,
      ...(fd === undefined ? {} : { slot: coldSlots(ctx, fd).to }),
    };
  },
  oldUnit(ctx) {
    const { record } = ctx.swap;
    const plan = record.plan!;
    const fd = ctx.host.frontDoor;
    return {
      unit: plan.unitName,
      port: newUnitPort(plan, ctx.host.config.servingPort),
      engine: ctx.previousEngine,
      mainPid: lastSeenPid(record, plan.unitName) ?? record.switch?.oldMainPid,
      ...(plan.clients?.inPlace?.fromModelDir === undefined
        ? {}
        : { modelDir: plan.clients.inPlace.fromModelDir }),
      ...(fd === undefined ? {} : { slot: coldSlots(ctx, fd).from }),
    };
  },
};
