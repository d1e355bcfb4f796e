import { describeEngineSource } from "../engine/engine-source.ts";
import { engineFor } from "../engine/engines.ts";
import { renderUnit } from "../engine/render-unit.ts";
import { cacheEnv, engineCacheDir } from "./engine-caches.ts";
import { inPlaceUnit } from "./in-place-plan.ts";
import type { FlagChoice, SwapPlan } from "./types.ts";
import { unifiedDiff } from "./unit-diff.ts";

/**
 * Renders the plan's unit from its flags and diffs it against the unit serving now; recomputes `ok`.
 * Called whenever the flags change (first plan, then again with the engine build's spellings).
 */
export function withRenderedUnit(plan: SwapPlan): SwapPlan {
  const rendered = renderPlanUnit(plan, plan.flags);
  const current = plan.host.currentUnit;
  // in place: the running unit, its name kept, the model path changed (or why the new flags rule it out)
  const inPlace = plan.clients?.inPlace;
  const kept =
    inPlace?.will === true && inPlace.fromModelDir !== undefined
      ? inPlaceUnit(
          current,
          rendered,
          { newModelDir: plan.modelDir, oldModelDir: inPlace.fromModelDir },
          engineFor(plan.engineKind).cacheVariables,
          `Weights loaded in place (${inPlace.mechanism ?? "the engine's update"}) by swap ${plan.swapId}: the process went on running; it started with ${inPlace.fromModelDir}.`,
        )
      : undefined;
  const unit = kept?.ok === true ? kept : rendered;
  if (kept?.ok === false)
    plan = { ...plan, clients: { ...plan.clients!, inPlace: { will: false, why: kept.why } } };
  const dir = plan.unitDir.replace(/\/+$/, "");
  const unitPath = `${dir}/${unit.name}`;
  const unitDiff = unifiedDiff(
    current.exists ? current.text : "",
    unit.text,
    current.exists ? `${dir}/${current.name}` : "/dev/null",
    unitPath,
  );
  const bg = plan.clients?.blueGreen;
  const restart = bg?.restart;
  return {
    ...plan,
    ...(bg === undefined || restart === undefined
      ? {}
      : {
          clients: {
            ...plan.clients!,
            blueGreen: {
              ...bg,
              restart: {
                ...restart,
                unitText: renderPlanUnit(
                  plan,
                  fullMemory(plan.flags, restart.fraction, engineFor(plan.engineKind).memory.setting),
                ).text,
              },
            },
          },
        }),
    unitName: unit.name,
    unitText: unit.text,
    unitPath,
    unitDiff,
    ok: plan.checks.every((c) => c.ok),
  };
}

/**
 * The flags of a restart at full memory: the fraction that kept room beside the old unit out, and the
 * recipe's or config's own back where it had one (else the engine's default).
 */
function fullMemory(
  flags: readonly FlagChoice[],
  fraction: string | undefined,
  setting: string,
): FlagChoice[] {
  const beside = flags.find((f) => f.setting === setting);
  const rest = flags.filter((f) => f !== beside);
  if (beside === undefined || fraction === undefined) return rest;
  return [
    ...rest,
    { ...beside, value: fraction, reason: "the recipe's or the config's, restored at full memory" },
  ];
}

/** The plan's unit with these flags. */
function renderPlanUnit(plan: SwapPlan, flags: readonly FlagChoice[]) {
  const caches = engineCacheDir(plan, flags);
  const env = [...(plan.env ?? []), ...(caches === undefined ? [] : cacheEnv(plan, caches))];
  return renderUnit({
    kind: plan.engineKind,
    ...(env.length === 0 ? {} : { env }),
    repo: plan.model.repo,
    sha: plan.model.sha,
    swapId: plan.swapId,
    serving: plan.host.currentUnit.name,
    venv: plan.venv,
    ...(plan.engine === undefined
      ? {}
      : {
          engine: {
            buildDir: plan.engine.buildDir,
            describe: describeEngineSource(plan.engine),
            ...(plan.engine.reused === true ? { reused: true } : {}),
          },
        }),
    flags,
    timeoutStartSeconds: plan.healthTimeoutSeconds,
    ...(plan.clients === undefined ? {} : { drainSeconds: plan.clients.drainSeconds }),
    ...(plan.clients?.blueGreen === undefined ? {} : { visibleDevices: plan.clients.blueGreen.devices }),
  });
}
