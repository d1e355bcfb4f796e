import { requestApproval } from "../../../src/approval/gate.ts";
import { planHash } from "../../../src/approval/plan-hash.ts";
import {
  type HostEngine,
  hostEngine,
  hostEngineKind,
  hostEngines,
} from "../../../src/config/host-engines.ts";
import {
  type EngineSource,
  type EngineSourceResult,
  engineBuildDir,
  lsRemoteCommand,
  parseLsRemote,
  resolveEngineSource,
  servingBuildOf,
} from "../../../src/engine/engine-source.ts";
import { asCodedError, passesThrough } from "../../../src/errors.ts";
import { chooseEngineRef, flagLayers, profileFor } from "../../../src/plan/flag-layers.ts";
import { makePlan } from "../../../src/plan/make-plan.ts";
import { modelDirFor } from "../../../src/plan/model-dir.ts";
import { readHostFacts } from "../../../src/plan/read-host-facts.ts";
import type { SwapPlan } from "../../../src/plan/types.ts";
import { failedWith, type StageContext, type StepResult } from "../../../src/swap/stage-context.ts";
import { servingPortOf } from "../../../src/swap/unit-ports.ts";
import { planClients } from "./front-door.ts";
import { planInPlace } from "./plan-in-place.ts";
import { reclaimableBytes } from "./reclaim.ts";

/**
 * Stage 3: read the host, make the plan. A plan with a failing check ends the swap here with nothing
 * touched (the plan is shown as refused); a dry run ends with the plan; otherwise the plan is put up for
 * approval, which may be given from now on while the download and the engine build run.
 */
export async function preflightStage(ctx: StageContext): Promise<StepResult> {
  const { swap, host } = ctx;
  const info = swap.record.model!;
  const facts = swap.record.facts!;
  const config = host.config;
  await swap.begin("preflight", "reading GPUs, disk, engine and the serving unit");
  const { unit: currentUnit, livePort } = await notePrevious(ctx);
  let plan: SwapPlan;
  try {
    const { request } = swap.record;
    const profile = profileFor(ctx.settings.profiles ?? [], info.repo);
    const chosen = hostEngine(config, request.engine ?? profile?.engine);
    if (!chosen.ok) {
      const why = `${chosen.problem} (${chosen.fix})`;
      swap.stage("preflight", "failed", why);
      return { fail: why, touched: false };
    }
    const modelDir = modelDirFor(config.modelsDir, info.repo, info.sha);
    const hostFacts = await readHostFacts(host, {
      host: host.name,
      modelsDir: config.modelsDir,
      venv: chosen.engine.venv,
      currentUnit,
      modelDir,
    });
    const ref = chooseEngineRef(request.engineRef, profile, config);
    const engine = await resolveEngine(ctx, chosen.engine, ref.ref, hostFacts.currentUnit);
    if (!engine.ok) {
      const why = `${engine.problem} (${engine.fix})`;
      swap.stage("preflight", "failed", why);
      return { fail: why, touched: false };
    }
    const { clients, check: frontDoorCheck, blueGreen } = await planClients(host, livePort, ctx.settings);
    const input: Parameters<typeof makePlan>[0] = {
      model: info,
      facts,
      host: hostFacts,
      hostConfig: {
        name: host.name,
        modelsDir: config.modelsDir,
        venv: chosen.engine.venv,
        unitDir: config.unitDir,
        servingPort: livePort,
        currentUnit,
      },
      requestedTp: request.tp ?? profile?.tp,
      swapId: swap.record.id,
      engineKind: chosen.engine.kind,
      hostEngines: hostEngines(config).map((e) => e.kind),
      ...(ctx.recipes === undefined ? {} : { recipes: ctx.recipes }),
      engine: engine.source,
      remoteCodeOrgs: ctx.settings.hub.remoteCodeOrgs,
      recipeOverrides: ctx.settings.recipeOverrides,
      ownRecipes: ctx.settings.ownRecipes ?? [],
      ownCompatibility: ctx.settings.ownCompatibility ?? [],
      flagLayers: flagLayers({ host: config, profile, sets: request.sets, engine: chosen.engine.kind }),
      engineRefWhy: describeRefChoice(ref, engine.source),
      weightScale: ctx.settings.weightScale,
      clients,
      blueGreen,
      sleepMode: ctx.settings.sleepMode,
      ...(frontDoorCheck === undefined ? {} : { frontDoorCheck }),
    };
    let planned = input;
    plan = makePlan(input);
    // short of disk: what retention would free counts (the swap deletes it after approval, before its download)
    if (plan.checks.some((c) => c.id === "disk" && !c.ok) && ctx.settings.retention !== undefined) {
      swap.set({ plan });
      const reclaimable = await reclaimableBytes(ctx, ctx.settings.retention);
      if (reclaimable > 0) {
        planned = { ...input, reclaimableBytes: reclaimable };
        plan = makePlan(planned);
      }
    }
    // a new revision of the served model: into the running engine, where it fits
    plan = await planInPlace(ctx, planned, plan);
  } catch (error) {
    if (passesThrough(error)) throw error;
    swap.stage("preflight", "failed", asCodedError(error).message);
    return failedWith(error, false);
  }
  swap.set({ plan, planHash: planHash(plan) });
  const refused = refuseFailingPlan(ctx);
  if (refused !== undefined) return refused;
  swap.stage("preflight", "done", `${plan.recipe} · tp ${plan.tp} · unit ${plan.unitName}`);
  if (swap.record.request.dryRun) {
    ctx.emit({ type: "planned", planHash: swap.record.planHash!, status: "dry-run" });
    return {
      end: "planned",
      reason: "dry run: the plan is in the thread; nothing was downloaded or changed",
    };
  }
  requestApproval(ctx);
  return { next: "prepare" };
}

/**
 * What serves on the host now (the ledger's, or the config's first unit), noted as the swap's `previous`:
 * the unit a rollback goes back to, and the port it listens on. Shared with the rollback's preflight.
 */
export async function notePrevious(
  ctx: Pick<StageContext, "host" | "ledger" | "swap">,
): Promise<{ unit: string; livePort: number }> {
  const { swap, host } = ctx;
  const serving = await ctx.ledger.serving();
  const unit = serving?.unit ?? host.config.currentUnit;
  const livePort = servingPortOf(serving, host.config.servingPort);
  swap.set({
    previous: {
      unit,
      ...(serving?.repo === undefined ? {} : { repo: serving.repo }),
      ...(serving?.sha === undefined ? {} : { sha: serving.sha }),
      ...(livePort === host.config.servingPort ? {} : { port: livePort }),
      engine: serving?.engine ?? hostEngineKind(host.config),
    },
  });
  return { unit, livePort };
}

/**
 * What the requested engine ref is in the engine's upstream, asked of the host (it fetches from there, and the
 * bot may have no route to it), and whether engine.allowedRefs lets it be built.
 */
async function resolveEngine(
  ctx: Pick<StageContext, "host" | "settings" | "swap">,
  engine: HostEngine,
  ref: string,
  serving: { exists: boolean; text: string },
): Promise<EngineSourceResult> {
  const { host, swap } = ctx;
  const { upstream } = engine;
  const listing = await host.must(lsRemoteCommand(upstream, ref), `listing the refs of ${upstream}`, {
    timeoutMs: 60_000,
  });
  const resolved = resolveEngineSource({
    ref,
    upstream,
    remoteRefs: parseLsRemote(listing.stdout),
    policy: ctx.settings.engine,
    buildDirFor: (commit) => engineBuildDir(host.config.modelsDir, commit, swap.record.id, engine.kind),
  });
  if (!resolved.ok) return resolved;
  // the build the serving unit runs, when the ref resolves to the commit it was built from: no rebuild
  const current = serving.exists
    ? servingBuildOf(serving.text, host.config.modelsDir, engine.kind)
    : undefined;
  const reused =
    current !== undefined && resolved.source.commit.startsWith(current.commit12)
      ? { buildDir: current.buildDir, reused: true }
      : {};
  return {
    ok: true,
    source: { ...resolved.source, ...reused, ...(engine.compileKernels ? { compileKernels: true } : {}) },
  };
}

/** The plan's line on the engine: which ref, why, and whether the serving unit's build is reused. */
function describeRefChoice(choice: { ref: string; why: string }, source: EngineSource): string {
  const at = `${choice.ref} at ${source.commit.slice(0, 7)}, ${choice.why}`;
  return source.reused === true
    ? `${at}: the serving unit's build of that commit is reused, no rebuild`
    : `${at}: a new build for this swap`;
}

/** Ends the swap here, nothing touched, when its plan fails a check: the plan is shown as refused. */
export function refuseFailingPlan(ctx: Pick<StageContext, "emit" | "swap">): StepResult | undefined {
  const { swap } = ctx;
  const failing = swap.record.plan!.checks.filter((c) => !c.ok);
  if (failing.length === 0) return undefined;
  swap.stage("preflight", "failed", failing.map((c) => c.detail).join("; "));
  ctx.emit({ type: "planned", planHash: swap.record.planHash!, status: "refused" });
  // the recipe check only echoes a failing quantization check: said once
  const said = failing.filter((c) => !(c.id === "recipe" && failing.some((f) => f.id === "quantization")));
  return {
    fail: `the plan was refused: ${said.map((c) => `${c.id}: ${c.detail}`).join("; ")}`,
    code: "PLAN_REFUSED",
    fix: said.map((c) => c.fix).find((f) => f !== undefined) ?? "see the plan's failing checks in the thread",
    touched: false,
  };
}
