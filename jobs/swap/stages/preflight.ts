import { requestApproval } from "../../../src/approval/gate.ts";
import { planHash } from "../../../src/approval/plan-hash.ts";
import { type HostEngine, hostEngine } from "../../../src/config/host-engines.ts";
import {
  type EngineSourceResult,
  engineBuildDir,
  lsRemoteCommand,
  parseLsRemote,
  resolveEngineSource,
} from "../../../src/engine/engine-source.ts";
import { asCodedError, isHostUnreachable } from "../../../src/errors.ts";
import { makePlan } from "../../../src/plan/make-plan.ts";
import { modelDirFor } from "../../../src/plan/model-dir.ts";
import { readHostFacts } from "../../../src/plan/read-host-facts.ts";
import type { SwapPlan } from "../../../src/plan/types.ts";
import { failedWith, type StageContext, type StepResult } from "../../../src/swap/stage-context.ts";
import { servingPortOf } from "../../../src/swap/unit-ports.ts";
import { planClients } from "./front-door.ts";

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
    const chosen = hostEngine(config, swap.record.request.engine);
    if (!chosen.ok) {
      const why = `${chosen.problem} (${chosen.fix})`;
      swap.stage("preflight", "failed", why);
      return { fail: why, touched: false };
    }
    const engine = await resolveEngine(ctx, chosen.engine);
    if (!engine.ok) {
      const why = `${engine.problem} (${engine.fix})`;
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
    const { clients, check: frontDoorCheck, blueGreen } = await planClients(host, livePort, ctx.settings);
    plan = makePlan({
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
      requestedTp: swap.record.request.tp,
      swapId: swap.record.id,
      engineKind: chosen.engine.kind,
      ...(ctx.recipes === undefined ? {} : { recipes: ctx.recipes }),
      engine: engine.source,
      remoteCodeOrgs: ctx.settings.hub.remoteCodeOrgs,
      recipeOverrides: ctx.settings.recipeOverrides,
      weightScale: ctx.settings.weightScale,
      clients,
      blueGreen,
      sleepMode: ctx.settings.sleepMode,
      ...(frontDoorCheck === undefined ? {} : { frontDoorCheck }),
    });
  } catch (error) {
    if (isHostUnreachable(error)) throw error;
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
export async function notePrevious(ctx: StageContext): Promise<{ unit: string; livePort: number }> {
  const { swap, host } = ctx;
  const serving = await ctx.ledger.serving();
  const unit = serving?.unit ?? host.config.currentUnit;
  const livePort = servingPortOf(serving, host.config.servingPort);
  swap.set({
    previous: {
      unit,
      ...(serving?.repo === undefined ? {} : { repo: serving.repo }),
      ...(livePort === host.config.servingPort ? {} : { port: livePort }),
      engine: serving?.engine ?? host.config.engine,
    },
  });
  return { unit, livePort };
}

/**
 * What the requested engine ref is in the engine's upstream, asked of the host (it fetches from there, and the
 * bot may have no route to it), and whether engine.allowedRefs lets it be built.
 */
async function resolveEngine(ctx: StageContext, engine: HostEngine): Promise<EngineSourceResult> {
  const { host, swap } = ctx;
  const ref = swap.record.request.engineRef;
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
  if (!resolved.ok || !engine.compileKernels) return resolved;
  return { ok: true, source: { ...resolved.source, compileKernels: true } };
}

/** Ends the swap here, nothing touched, when its plan fails a check: the plan is shown as refused. */
export function refuseFailingPlan(ctx: StageContext): StepResult | undefined {
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
