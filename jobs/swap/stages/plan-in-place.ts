import { engineFor, engineOfExecStart } from "../../../src/engine/engines.ts";
import { inPlaceCandidate, inPlaceClients, type ServedModel } from "../../../src/plan/in-place-plan.ts";
import { makePlan } from "../../../src/plan/make-plan.ts";
import type { PlanInput } from "../../../src/plan/plan-input.ts";
import type { SwapPlan } from "../../../src/plan/types.ts";
import type { StageContext } from "../../../src/swap/stage-context.ts";

/**
 * Preflight's in-place question (issue #31): a new revision of the model serving now, that fits the running
 * engine, is planned to load into it (cold, at the served tp, nothing parked or beside), when the unit that
 * would result differs from the running one only in the model path. Otherwise the usual plan, saying why
 * not. `plan` is the usual plan, already made.
 */
export async function planInPlace(
  ctx: Pick<StageContext, "ledger" | "settings">,
  input: PlanInput,
  plan: SwapPlan,
): Promise<SwapPlan> {
  if (plan.clients === undefined || !ctx.settings.inPlace) return plan;
  const current = input.host.currentUnit;
  const served = current.exists ? await servedModel(ctx, current.execStart) : undefined;
  const candidate = inPlaceCandidate(plan, served, engineFor(plan.engineKind), current);
  if (candidate === undefined) return plan;
  if (!candidate.ok) return noted(plan, candidate.why);
  const inPlace = inPlaceClients(
    candidate.served,
    engineFor(plan.engineKind),
    plan.facts.weightBytes * (plan.weightScale ?? 1),
    candidate.served.plan.tp,
  );
  const cold: PlanInput = {
    ...input,
    blueGreen:
      input.blueGreen === undefined
        ? undefined
        : { ...input.blueGreen, standby: { missing: "the new revision loads into the running engine" } },
    inPlace,
  };
  // the served tp, as the planner chooses it cold; asked for only when it would choose another
  let loaded = makePlan(cold);
  if (loaded.tp !== candidate.served.plan.tp)
    loaded = makePlan({ ...cold, requestedTp: candidate.served.plan.tp });
  // the flags, port or environment would change: the running engine cannot take them
  if (loaded.clients?.inPlace?.will !== true) return noted(plan, loaded.clients?.inPlace?.why ?? "");
  return {
    ...loaded,
    tpReason: "the running engine's, which loads the new weights in place",
  };
}

/** The served model, when a swap of modelswap put it there and its plan is still kept. */
async function servedModel(
  ctx: Pick<StageContext, "ledger">,
  execStart: readonly string[],
): Promise<ServedModel | undefined> {
  const serving = await ctx.ledger.serving();
  if (serving?.swapId === undefined) return undefined;
  const plan = await ctx.ledger.planOf(serving.swapId);
  const modelDir = engineOfExecStart(execStart).modelDirOf(execStart);
  if (plan === undefined || modelDir === undefined) return undefined;
  return { plan, modelDir };
}

function noted(plan: SwapPlan, why: string): SwapPlan {
  return { ...plan, clients: { ...plan.clients!, inPlace: { will: false, why } } };
}
