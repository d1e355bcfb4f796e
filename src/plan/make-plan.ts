import { engineFor } from "../engine/engines.ts";
import { catalogueRecipes, shippedCatalogue } from "./catalogue.ts";
import { chooseTp, type TpChoice } from "./choose-tp.ts";
import { chooseClientMode } from "./client-mode.ts";
import { besideFraction, clientPlan, planPark } from "./client-plan.ts";
import { atLeast, type ComputeCapability, quantizationCheck, smLabel } from "./compatibility.ts";
import { contextNeed } from "./context-need.ts";
import { diskCheck } from "./disk-check.ts";
import {
  downtimeBasis,
  expectedDowntimeSeconds,
  healthTimeoutSeconds,
  LOAD_BYTES_PER_SECOND,
  PAGE_CACHED_BYTES_PER_SECOND,
  startupOf,
} from "./downtime.ts";
import { hubCliCheck, unitFileCheck, venvCheck } from "./host-checks.ts";
import { inPlaceBasis } from "./in-place-plan.ts";
import { modelDirFor } from "./model-dir.ts";
import type { PlanInput, RecipeOverride } from "./plan-input.ts";
import { withRenderedUnit } from "./plan-unit.ts";
import { preloadPlan } from "./preload.ts";
import {
  isModelRecipe,
  matchingRecipes,
  type RecipeSetting,
  recipeSettings,
  withSetting,
} from "./recipes.ts";
import { remoteCodeCheck, TRUST_REMOTE_CODE } from "./remote-code-check.ts";
import type { FlagChoice, ModelFacts, PlanCheck, SwapPlan } from "./types.ts";

const quantLabelOf = (facts: ModelFacts): string => facts.quant?.description ?? facts.quantization;

/**
 * The plan of a swap, computed before anyone approves it: recipe, tp, flags (current upstream
 * spellings until the engine build's `--help` is read: applyFlagSpellings), checks, the unit and its
 * diff, expected downtime. It reads nothing itself; a failing check makes `ok` false, never throws.
 */
export function makePlan(input: PlanInput): SwapPlan {
  const { model, host, hostConfig } = input;
  const engine = engineFor(input.engineKind);
  const { memory } = engine;
  const scale = input.weightScale ?? 1;
  // the facts the plan reasons with: the real model's weights (the Hub's on the bench are scaled down)
  const facts = { ...input.facts, weightBytes: input.facts.weightBytes * scale };
  const gpus = host.gpus;
  // Mixed GPUs: the oldest decides what runs.
  const cc = gpus.reduce<ComputeCapability>(
    (min, g) => (atLeast(g.computeCapability, min) ? min : g.computeCapability),
    gpus[0]?.computeCapability ?? { major: 0, minor: 0 },
  );
  const gpuName = gpus[0]?.name ?? "no GPU";

  const applied = matchingRecipes(input.recipes ?? catalogueRecipes(input.ownRecipes), {
    repo: model.repo,
    facts,
    cc,
    engine: engine.kind,
  });
  const need = contextNeed(facts, applied, input.flagLayers ?? [], engine);
  let tpChoice = chooseTp(facts, gpus, input.requestedTp, memory, need);
  const modeAt = (choice: TpChoice) =>
    chooseClientMode({
      gpus,
      vram: choice.vram,
      standby: input.blueGreen?.standby ?? {
        missing: "the host has no front door with a standby slot (hosts[].frontDoor.standby)",
      },
      sharedBenchmark: input.blueGreen?.sharedBenchmark ?? "after-flip",
      flipBackSeconds: input.blueGreen?.flipBackSeconds ?? 0,
      restartAtFullMemory: input.blueGreen?.restartAtFullMemory ?? false,
    });
  let mode = input.clients === undefined ? undefined : modeAt(tpChoice);
  if (mode?.mode === "cold" && input.requestedTp === undefined && input.blueGreen !== undefined) {
    // no swap downtime is worth more than the larger KV cache of more GPUs: the largest tp that fits
    // beside the model serving now, when there is one (asked for a tp, the swap keeps it)
    for (let tp = tpChoice.tp - 1; tp >= 1; tp--) {
      const smaller = chooseTp(facts, gpus, tp, memory, need);
      if (!smaller.tpCheck.ok || !smaller.vramCheck.ok) continue;
      const beside = modeAt(smaller);
      if (beside.mode !== "bluegreen") continue;
      tpChoice = {
        ...smaller,
        tpCheck: {
          ...smaller.tpCheck,
          detail: smaller.tpCheck.detail.replace(/ \(requested\)$/, " (blue/green)"),
        },
        reason: `${tp} GPUs: the largest tp that fits beside the model serving now, so the swap is blue/green (tp ${tpChoice.tp}, ${tpChoice.reason}, would be cold)`,
      };
      mode = beside;
      break;
    }
  }
  const quant: PlanCheck =
    gpus.length === 0
      ? {
          id: "quantization",
          ok: false,
          detail: "no GPUs found",
          fix: "check the NVIDIA driver on the host",
        }
      : (({ row: _row, ...check }) => check)(
          quantizationCheck({
            facts,
            cc,
            gpuName,
            engine: engine.kind,
            hostEngines: input.hostEngines ?? [engine.kind],
            table: [
              ...(input.ownCompatibility ?? []),
              ...(input.compatibility ?? shippedCatalogue().compatibility),
            ],
          }),
        );
  const recipeResult = recipeSettings(applied, engine, {
    facts,
    cc,
    tp: tpChoice.tp,
    kvCacheBytes: Math.max(0, tpChoice.vram.kvPerGpuBytes) * tpChoice.tp,
    hostMemoryBytes: host.memoryBytes,
  });
  const known = applied.some(isModelRecipe);
  const typeText = [facts.modelType, facts.textModelType].filter((t) => t !== undefined).join(" / ");
  const generic = `No known-good recipe for ${facts.architecture}${typeText === "" ? "" : `, model_type ${typeText}`}: engine defaults; the sanity gate decides.`;
  const recipeCheck: PlanCheck = {
    id: "recipe",
    ok: true,
    detail:
      applied.length === 0
        ? `none: ${engine.name}'s defaults (no recipe names ${facts.architecture}, ${quantLabelOf(facts)} on ${smLabel(cc)})`
        : applied.map((r) => `${r.id}: ${r.title}`).join("; "),
  };

  // loaded in place: the running engine keeps its GPUs, port and flags; nothing is parked
  const inPlace = input.inPlace?.will === true ? input.inPlace : undefined;
  const park =
    inPlace !== undefined ? undefined : planPark(input, mode?.mode === "cold", tpChoice.vram, memory);
  const modelDir = modelDirFor(hostConfig.modelsDir, model.repo, model.sha);
  // the repo's files decide whether its Python runs, and the config whose: never a recipe or an override
  const remoteCode = remoteCodeCheck(model, facts, input.remoteCodeOrgs);
  let layered = overridden(
    recipeResult.settings,
    applied.map((r) => r.id),
    input.recipeOverrides ?? [],
  );
  for (const layer of input.flagLayers ?? [])
    for (const s of layer.settings) layered = withSetting(layered, { ...s, from: layer.from });
  const chosen = [
    ...layered.filter((s) => s.setting !== TRUST_REMOTE_CODE && s.setting !== SERVED_MODEL_NAME),
    ...(remoteCode?.flag === undefined ? [] : [remoteCode.flag]),
  ];
  const recipeChosen = [...chosen, ...(engine.companions?.(chosen) ?? [])];
  // a name the config or the swap gives replaces the Hub id the plan serves the model by
  const servedName = layered.find((s) => s.setting === SERVED_MODEL_NAME);
  // beside the old unit the plan sets its own fraction; a restart at full memory puts theirs back
  const theirFraction = recipeChosen.find((s) => s.setting === memory.setting)?.value;
  const beside =
    mode?.mode === "bluegreen"
      ? {
          ...mode.blueGreen,
          ...(mode.blueGreen.restart === undefined || theirFraction === undefined
            ? {}
            : { restart: { unitText: "", fraction: theirFraction } }),
        }
      : undefined;
  const settings: RecipeSetting[] = [
    {
      setting: "model-path",
      value: modelDir,
      reason: `the weights at commit ${model.sha.slice(0, 7)}, in a directory of their own (a new commit never overwrites a served model)`,
    },
    servedName ?? {
      setting: SERVED_MODEL_NAME,
      value: model.repo,
      reason: "clients name the model by its Hub id",
    },
    {
      setting: "host",
      value: "127.0.0.1",
      reason: "loopback only: modelswap checks health on the host; publish it through your proxy",
    },
    park?.will === true
      ? {
          setting: "port",
          value: String(park.port),
          reason:
            "the front door's other slot: the old unit, parked, keeps its port until the new one is released",
        }
      : beside === undefined
        ? {
            setting: "port",
            value: String(hostConfig.servingPort),
            reason: "the port the serving unit listens on",
          }
        : {
            setting: "port",
            value: String(beside.port),
            reason: "the front door's standby slot: the new unit starts beside the one serving now",
          },
    { setting: "tp-size", value: String(tpChoice.tp), reason: tpChoice.reason },
    ...(park?.will === true && park.kvPerGpuBytes !== undefined
      ? besideFraction(
          recipeChosen,
          { ...park, kvPerGpuBytes: park.kvPerGpuBytes },
          memory,
          "what the parked model keeps",
        )
      : besideFraction(recipeChosen, beside, memory)),
    ...engine.stopSettings(input.clients?.drainSeconds),
    ...(input.sleepMode === true ? (engine.sleep?.settings ?? []) : []),
  ];
  const flags: FlagChoice[] = settings.map((s) => {
    const spelling = engine.spellingsOf(s.setting)[0]!;
    return { ...s, flag: spelling.flag, ...(spelling.positional === true ? { positional: true } : {}) };
  });
  const env = [...recipeResult.env, ...(input.sleepMode === true ? (engine.sleep?.env ?? []) : [])];

  const checks = [
    recipeCheck,
    quant,
    tpChoice.vramCheck,
    tpChoice.tpCheck,
    diskCheck(model, host, hostConfig.modelsDir, scale, input.reclaimableBytes ?? 0),
    venvCheck(host, hostConfig.venv),
    hubCliCheck(host),
    ...unitFileCheck(host),
    ...(remoteCode === undefined ? [] : [remoteCode.check]),
    ...(input.frontDoorCheck === undefined ? [] : [input.frontDoorCheck]),
  ];

  const startup = startupOf(facts.quantization, cc);
  // a blue/green swap loads while the old unit serves: no downtime to shorten
  const preload =
    input.clients === undefined || beside !== undefined ? undefined : preloadPlan(host, facts.weightBytes);
  return withRenderedUnit({
    model,
    facts: input.facts,
    ...(scale === 1 ? {} : { weightScale: scale }),
    host,
    engineKind: engine.kind,
    recipe: applied.length === 0 ? "engine-defaults" : applied.map((r) => r.id).join(" + "),
    tp: tpChoice.tp,
    tpReason: tpChoice.reason,
    flags,
    ...(env.length === 0 ? {} : { env }),
    checks,
    ok: false,
    modelDir,
    unitName: "",
    unitText: "",
    unitDiff: "",
    // the estimate reads the page cache when the weights are preloaded; the health limit stays the cold
    // read's (a preload evicted before the load must not roll back a good model)
    expectedDowntimeSeconds:
      inPlace === undefined
        ? expectedDowntimeSeconds(
            facts.weightBytes,
            startup.seconds,
            preload?.will === true ? PAGE_CACHED_BYTES_PER_SECOND : LOAD_BYTES_PER_SECOND,
          )
        : preload?.will === true
          ? (inPlace.seconds ?? 1)
          : Math.ceil(facts.weightBytes / LOAD_BYTES_PER_SECOND),
    downtimeBasis:
      inPlace === undefined
        ? downtimeBasis(facts.weightBytes, startup, preload?.will === true)
        : inPlaceBasis(facts.weightBytes, tpChoice.tp, inPlace, preload?.will === true),
    ...(input.clients === undefined
      ? {}
      : {
          clients: {
            ...clientPlan(input.clients, mode!, beside, input.blueGreen, preload, park),
            ...(input.inPlace === undefined ? {} : { inPlace: input.inPlace }),
          },
        }),
    healthTimeoutSeconds: healthTimeoutSeconds(facts.weightBytes, startup.seconds),
    swapId: input.swapId,
    engine: input.engine,
    venv: hostConfig.venv,
    unitDir: hostConfig.unitDir,
    unitPath: "",
    notes: [
      ...(known ? [] : [generic]),
      ...(input.engineRefWhy === undefined ? [] : [`Engine: ${input.engineRefWhy}.`]),
      ...recipeResult.notes,
    ],
  });
}

/**
 * The recipe's settings with the config's overrides for that recipe applied: a value set (or a setting
 * added), a setting removed; each says so in its reason, with what the recipe had.
 */
function overridden(
  settings: readonly RecipeSetting[],
  recipeIds: readonly string[],
  overrides: readonly RecipeOverride[],
): RecipeSetting[] {
  let out = [...settings];
  for (const o of overrides.filter((x) => recipeIds.includes(x.recipe))) {
    const said = `config override (recipes.overrides): ${o.reason}`;
    out = out.filter((s) => !o.remove.includes(s.setting));
    for (const [setting, raw] of Object.entries(o.set)) {
      const value = raw === true ? undefined : raw;
      const before = out.find((s) => s.setting === setting);
      const had =
        before === undefined ? "" : `; the recipe had ${before.value ?? "the flag on"} (${before.reason})`;
      const next = { setting, value, reason: `${said}${had}`, from: `override of ${o.recipe}` };
      out = before === undefined ? [...out, next] : out.map((s) => (s === before ? next : s));
    }
  }
  return out;
}

/** The name clients ask the model by (the Hub id unless the config or the swap gives another). */
export const SERVED_MODEL_NAME = "served-model-name";
