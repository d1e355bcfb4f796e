import type { EngineKind } from "../engine/engine-kind.ts";
import type { EngineMemory } from "../engine/engine-setup.ts";
import type { EngineSource } from "../engine/engine-source.ts";
import { engineFor, engineOfExecStart } from "../engine/engines.ts";
import { hubPullRequest } from "../grammar/model-ref.ts";
import type { ModelSummary } from "../hub/types.ts";
import { weightFiles } from "../hub/weight-files.ts";
import { formatGB, formatGiB } from "./byte-units.ts";
import { chooseTp, type TpChoice } from "./choose-tp.ts";
import { chooseClientMode } from "./client-mode.ts";
import { modelDirFor } from "./model-dir.ts";
import { withRenderedUnit } from "./plan-unit.ts";
import { preloadPlan } from "./preload.ts";
import {
  atLeast,
  type ComputeCapability,
  findRecipe,
  quantizationSupport,
  quantLabel,
  type Recipe,
  type RecipeSetting,
  smLabel,
} from "./recipes.ts";
import type {
  ClientPlan,
  FlagChoice,
  HostFacts,
  ModelFacts,
  PlanCheck,
  Quantization,
  SwapPlan,
} from "./types.ts";
import { realLargestShardBytes, realTotalBytes } from "./weight-scale.ts";

export interface PlanHostConfig {
  name: string;
  modelsDir: string;
  venv: string;
  unitDir: string;
  /** The port of the unit serving now (servingPort until a blue/green swap moved it to the standby's). */
  servingPort: number;
  currentUnit: string;
}

/** What a blue/green swap needs from the host: the standby slot (or why there is none) and the config. */
export interface BlueGreenInput {
  standby: { server: string; port: number } | { missing: string };
  sharedBenchmark: "after-flip" | "reduced";
  flipBackSeconds: number;
  restartAtFullMemory: boolean;
}

export interface PlanInput {
  model: ModelSummary;
  facts: ModelFacts;
  host: HostFacts;
  hostConfig: PlanHostConfig;
  requestedTp?: number;
  swapId: string;
  /** The engine that will serve (default SGLang): its recipes, flags, memory model and unit. */
  engineKind?: EngineKind;
  /** The recipe table (default: the engine's); injectable so tests can plan with a broken one. */
  recipes?: readonly Recipe[];
  /** The engine source to build (resolved on the host: resolveEngineSource). */
  engine: EngineSource;
  /** Orgs whose models may run their own Python (hub.remoteCodeOrgs). */
  remoteCodeOrgs: readonly string[];
  /** The config's changes to known recipes (recipes.overrides). */
  recipeOverrides?: readonly RecipeOverride[];
  /**
   * bench.weightScale (default 1): the Hub's weight files are 1/N of the real model's, so every figure the
   * plan reasons with (VRAM, tp, disk, downtime) uses their sizes × N. Only the demo and the bench set it.
   */
  weightScale?: number;
  /** How clients see the swap (the front door's part read from it in preflight). */
  clients?: ClientPlan;
  /** Whether, and where, the new unit may start beside the old one; absent: the swap is cold. */
  blueGreen?: BlueGreenInput;
  /** The front door's check (preflight reads it), when the host has one. */
  frontDoorCheck?: PlanCheck;
  /** swaps.sleepMode: units start parkable, and a cold swap parks a parkable old unit (planPark). */
  sleepMode?: boolean;
}

/** One entry of recipes.overrides: settings set (true: a flag without a value) or removed, and why. */
export interface RecipeOverride {
  recipe: string;
  set: Readonly<Record<string, string | true>>;
  remove: readonly string[];
  reason: string;
}

/** Parallel downloads of `hf download` (its --max-workers default). */
export const HF_MAX_WORKERS = 8;

/**
 * Downtime, from the old unit's stop to the new one's health (DESIGN.md §9): the weights read from disk
 * and sharded onto the GPUs, plus the engine's start-up.
 *
 * Weights: 1.5 GB/s, a cold read as SGLang loads safetensors shards (sglang#1479: DeepSeek-V2.5's 8.6 GB
 * shards at 6–9 s each until they were in the page cache; a Gen4 NVMe's line rate is 7 GB/s, page-cached
 * files load at ≈ 10 GB/s, sglang#3416), so 223 GB take ≈ 2.5 min. Start-up: 90 s to stop the old unit,
 * start the process, initialise CUDA and capture CUDA graphs (12–60 s); NVFP4 on sm_120 JIT-compiles and
 * warms up its kernels for minutes (210 s seen against 18 s of weight I/O), so 240 s there.
 * The health wait allows three times the estimate, at least 10 minutes, in whole minutes: a slow disk
 * must not roll back a good model, a hung load must not wait forever.
 */
export const LOAD_BYTES_PER_SECOND = 1.5e9;
/** Weights already in the page cache (the preload): ≈ 10 GB/s, sglang#3416. */
export const PAGE_CACHED_BYTES_PER_SECOND = 10e9;
export const STARTUP_SECONDS = 90;
export const SM120_NVFP4_STARTUP_SECONDS = 240;

export function expectedDowntimeSeconds(
  weightBytes: number,
  startupSeconds = STARTUP_SECONDS,
  bytesPerSecond = LOAD_BYTES_PER_SECOND,
): number {
  return Math.round(startupSeconds + weightBytes / bytesPerSecond);
}

export function healthTimeoutSeconds(weightBytes: number, startupSeconds = STARTUP_SECONDS): number {
  return Math.max(600, Math.ceil((3 * expectedDowntimeSeconds(weightBytes, startupSeconds)) / 60) * 60);
}

/** The start-up part of the downtime on these GPUs, and what it is made of. */
export function startupOf(
  quantization: Quantization,
  cc: ComputeCapability,
): { seconds: number; what: string } {
  if (quantization === "nvfp4" && cc.major === 12) {
    return {
      seconds: SM120_NVFP4_STARTUP_SECONDS,
      what: "to stop, start, JIT-compile and warm up the NVFP4 kernels on sm_120",
    };
  }
  return { seconds: STARTUP_SECONDS, what: "to stop, start and capture CUDA graphs" };
}

/** What the downtime estimate assumes, in one line: "223 GB of weights read … (2.5 min) + 4 min to …". */
export function downtimeBasis(
  weightBytes: number,
  startup: { seconds: number; what: string },
  preloaded = false,
): string {
  const rate = preloaded ? PAGE_CACHED_BYTES_PER_SECOND : LOAD_BYTES_PER_SECOND;
  const from = preloaded ? "from the page cache (preloaded)" : "cold from disk";
  return `${formatGB(weightBytes)} of weights read ${from} at ${rate / 1e9} GB/s (${roughly(weightBytes / rate)}) + ${roughly(startup.seconds)} ${startup.what}`;
}

/** "90 s", "2.5 min", "4 min": the parts of an estimate, not rounded away. */
function roughly(seconds: number): string {
  if (seconds < 120) return `${Math.round(seconds)} s`;
  return `${(seconds / 60).toFixed(1).replace(/\.0$/, "")} min`;
}

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

  let tpChoice = chooseTp(facts, gpus, input.requestedTp, memory);
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
      const smaller = chooseTp(facts, gpus, tp, memory);
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
      : { id: "quantization", ...quantizationSupport(facts.quantization, cc, gpuName) };
  const found = findRecipe(facts, cc, input.recipes ?? engine.recipes);
  const recipeResult = found?.recipe.settings({
    facts,
    cc,
    tp: tpChoice.tp,
    kvCacheBytes: Math.max(0, tpChoice.vram.kvPerGpuBytes) * tpChoice.tp,
    hostMemoryBytes: host.memoryBytes,
  });
  const recipeCheck: PlanCheck =
    found !== undefined
      ? { id: "recipe", ok: true, detail: `${found.id}: ${found.recipe.title}` }
      : !quant.ok
        ? {
            id: "recipe",
            ok: false,
            detail: `no recipe: ${quantLabel(facts.quantization)} does not run on ${smLabel(cc)} (see the quantization check)`,
          }
        : {
            id: "recipe",
            ok: false,
            detail: `no known-good recipe for ${facts.family} ${quantLabel(facts.quantization)} on ${smLabel(cc)} (${gpuName})`,
            fix: `serve it once by hand with ${engine.name}, then add the flags that worked, each with its reason, to its recipes (src/plan/recipes.ts for SGLang, src/engine/vllm-recipes.ts for vLLM)`,
          };

  const park = planPark(input, mode?.mode === "cold");
  const modelDir = modelDirFor(hostConfig.modelsDir, model.repo, model.sha);
  const recipeSettings = overridden(recipeResult?.settings ?? [], found?.id, input.recipeOverrides ?? []);
  // beside the old unit the plan sets its own fraction; a restart at full memory puts theirs back
  const theirFraction = recipeSettings.find((s) => s.setting === memory.setting)?.value;
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
    {
      setting: "served-model-name",
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
    ...besideFraction(recipeSettings, beside, memory),
    ...engine.stopSettings(input.clients?.drainSeconds),
    ...(input.sleepMode === true ? (engine.sleep?.settings ?? []) : []),
  ];
  const flags: FlagChoice[] = settings.map((s) => {
    const spelling = engine.spellingsOf(s.setting)[0]!;
    return { ...s, flag: spelling.flag, ...(spelling.positional === true ? { positional: true } : {}) };
  });
  const env = [...(recipeResult?.env ?? []), ...(input.sleepMode === true ? (engine.sleep?.env ?? []) : [])];

  const checks = [
    recipeCheck,
    quant,
    tpChoice.vramCheck,
    tpChoice.tpCheck,
    diskCheck(model, host, hostConfig.modelsDir, scale),
    venvCheck(host, hostConfig.venv),
    hubCliCheck(host),
    ...remoteCodeCheck(model, facts, input.remoteCodeOrgs),
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
    recipe: found?.id ?? "none",
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
    expectedDowntimeSeconds: expectedDowntimeSeconds(
      facts.weightBytes,
      startup.seconds,
      preload?.will === true ? PAGE_CACHED_BYTES_PER_SECOND : LOAD_BYTES_PER_SECOND,
    ),
    downtimeBasis: downtimeBasis(facts.weightBytes, startup, preload?.will === true),
    ...(input.clients === undefined
      ? {}
      : {
          clients: clientPlan(input.clients, mode!, beside, input.blueGreen, preload, park),
        }),
    healthTimeoutSeconds: healthTimeoutSeconds(facts.weightBytes, startup.seconds),
    swapId: input.swapId,
    engine: input.engine,
    venv: hostConfig.venv,
    unitDir: hostConfig.unitDir,
    unitPath: "",
    notes: recipeResult?.notes ?? [],
  });
}

/**
 * The recipe's settings, and on shared GPUs the engine's memory fraction that leaves the GPU's
 * activation room free beside the unit serving now (it replaces one the recipe or the config set: theirs
 * is a share of an empty GPU).
 */
function besideFraction(
  settings: RecipeSetting[],
  beside: NonNullable<ClientPlan["blueGreen"]> | undefined,
  memory: EngineMemory,
): RecipeSetting[] {
  const fraction = beside?.memFractionStatic;
  if (fraction === undefined) return settings;
  const theirs = settings.find((s) => s.setting === memory.setting);
  const replaced =
    theirs === undefined ? "" : `; instead of ${theirs.value} (${theirs.reason}), a share of an empty GPU`;
  return [
    ...settings.filter((s) => s !== theirs),
    {
      setting: memory.setting,
      value: String(fraction),
      reason: `beside the model serving now on the same GPUs: ${memory.appliesTo}, and ${fraction} leaves free what it keeps free alone (${formatGiB(beside!.kvPerGpuBytes)}/GPU of KV cache until its next restart)${replaced}`,
    },
  ];
}

/** The plan's client part: the mode chosen, and the front door's slots for it. */
function clientPlan(
  base: ClientPlan,
  mode: ReturnType<typeof chooseClientMode>,
  beside: ClientPlan["blueGreen"],
  blueGreen: BlueGreenInput | undefined,
  preload: ClientPlan["preload"],
  park: ClientPlan["park"],
): ClientPlan {
  const fd = base.frontDoor;
  const from = fd?.from ?? fd?.server;
  const standby = blueGreen !== undefined && "server" in blueGreen.standby ? blueGreen.standby : undefined;
  const toStandby = (mode.mode === "bluegreen" || park?.will === true) && standby !== undefined;
  return {
    ...base,
    mode: mode.mode,
    why: mode.why,
    ...(preload === undefined ? {} : { preload }),
    ...(park === undefined ? {} : { park }),
    ...(fd === undefined
      ? {}
      : {
          frontDoor: {
            ...fd,
            ...(from === undefined ? {} : { from }),
            server: toStandby ? standby.server : fd.server,
          },
        }),
    ...(beside === undefined ? {} : { blueGreen: beside }),
  };
}

/**
 * The recipe's settings with the config's overrides for that recipe applied: a value set (or a setting
 * added), a setting removed; each says so in its reason, with what the recipe had.
 */
function overridden(
  settings: readonly RecipeSetting[],
  recipeId: string | undefined,
  overrides: readonly RecipeOverride[],
): RecipeSetting[] {
  let out = [...settings];
  for (const o of overrides.filter((x) => x.recipe === recipeId)) {
    const said = `config override (recipes.overrides): ${o.reason}`;
    out = out.filter((s) => !o.remove.includes(s.setting));
    for (const [setting, raw] of Object.entries(o.set)) {
      const value = raw === true ? undefined : raw;
      const before = out.find((s) => s.setting === setting);
      const had =
        before === undefined ? "" : `; the recipe had ${before.value ?? "the flag on"} (${before.reason})`;
      const next = { setting, value, reason: `${said}${had}` };
      out = before === undefined ? [...out, next] : out.map((s) => (s === before ? next : s));
    }
  }
  return out;
}

/**
 * Free space for what is still to fetch, plus a margin: the real `hf download` restarts an in-progress
 * shard from byte 0 after its process dies and leaves the old partial file behind, so up to
 * max-workers (8) × the largest shard can be on disk twice. Sizes are the real model's (weight files ×
 * bench.weightScale; bytes already on disk likewise, at most the whole model).
 */
function diskCheck(model: ModelSummary, host: HostFacts, modelsDir: string, scale: number): PlanCheck {
  const total = realTotalBytes(model, scale);
  const onDisk = Math.min(total, host.bytesOnDisk * scale);
  const toFetch = Math.max(0, total - onDisk);
  const shards = weightFiles(model.files);
  const largest = realLargestShardBytes(model, scale);
  const workers = Math.min(HF_MAX_WORKERS, Math.max(1, (shards.length > 0 ? shards : model.files).length));
  const margin = toFetch === 0 ? 0 : workers * largest;
  const need = toFetch + margin;
  const already = onDisk > 0 ? ` (${formatGB(onDisk)} already there)` : "";
  const marginText =
    margin === 0
      ? "nothing left to fetch"
      : `${formatGB(margin)} margin: ${workers === 1 ? "1 download" : `${workers} parallel downloads`} × ${formatGB(largest)} largest shard, since hf restarts an interrupted shard from 0 and leaves the partial file behind`;
  const detail = `${formatGB(toFetch)} to fetch${already} + ${marginText}; ${formatGB(host.freeDiskBytes)} free at ${modelsDir}`;
  if (host.freeDiskBytes >= need) return { id: "disk", ok: true, detail };
  return {
    id: "disk",
    ok: false,
    detail: `${detail}: ${formatGB(need - host.freeDiskBytes)} short`,
    fix: `free at least ${formatGB(need - host.freeDiskBytes)} in ${modelsDir} (old model directories no unit serves can go), or point the host's modelsDir at a bigger disk`,
  };
}

/**
 * A model whose config.json has auto_map runs Python from its own repo (--trust-remote-code): only for
 * orgs an admin trusts (hub.remoteCodeOrgs), and never from a Hub pull request, which anyone can open.
 */
function remoteCodeCheck(
  model: ModelSummary,
  facts: ModelFacts,
  allowedOrgs: readonly string[],
): PlanCheck[] {
  if (!facts.needsRemoteCode) return [];
  const org = model.repo.split("/")[0] ?? "";
  const what = "runs Python from the model repo (config.json auto_map needs --trust-remote-code)";
  const pullRequest = hubPullRequest(model.revision);
  if (pullRequest !== undefined) {
    return [
      {
        id: "remote-code",
        ok: false,
        detail: `${what}, and this revision is Hub pull request #${pullRequest}: anyone's code`,
        fix: "ask the repo's owner to merge it, then swap to main",
      },
    ];
  }
  if (allowedOrgs.some((o) => o.toLowerCase() === org.toLowerCase())) {
    return [{ id: "remote-code", ok: true, detail: `${what}; ${org} is trusted in hub.remoteCodeOrgs` }];
  }
  return [
    {
      id: "remote-code",
      ok: false,
      detail: `${what}, and ${org} is not in hub.remoteCodeOrgs`,
      fix: `read the repo's .py files; if you trust ${org} to run code on the host, an admin adds it to hub.remoteCodeOrgs`,
    },
  ];
}

export function venvCheck(host: Pick<HostFacts, "venvOk">, venv: string): PlanCheck {
  if (host.venvOk) return { id: "venv", ok: true, detail: `${venv}/bin/python runs` };
  return {
    id: "venv",
    ok: false,
    detail: `${venv}/bin/python is missing or does not run`,
    fix: `create the venv on the host (python3 -m venv ${venv}) with the CUDA torch stack the engine needs; each engine build runs from a directory of its own on this venv's packages, and modelswap never installs into it`,
  };
}

export function hubCliCheck(host: Pick<HostFacts, "hubCli">): PlanCheck {
  if (host.hubCli === "hf") return { id: "hub-cli", ok: true, detail: "hf (huggingface_hub) is installed" };
  const fix = "pip install -U huggingface_hub (in the venv or for the SSH user) gives the hf command";
  if (host.hubCli === "huggingface-cli") {
    return {
      id: "hub-cli",
      ok: false,
      detail:
        "only huggingface-cli is installed: it is deprecated and no longer works in huggingface_hub 1.x",
      fix,
    };
  }
  return { id: "hub-cli", ok: false, detail: "no Hugging Face CLI (hf) on the host", fix };
}

/** GPUs as the plan states them: "8 × NVIDIA RTX PRO 6000 Blackwell Server Edition (sm_120, 95.6 GiB)". */
export function describeGpus(host: Pick<HostFacts, "gpus">): string {
  const first = host.gpus[0];
  if (first === undefined) return "no GPUs found";
  return `${host.gpus.length} × ${first.name} (${smLabel(first.computeCapability)}, ${formatGiB(first.memoryTotalMiB * 1024 * 1024)})`;
}

/**
 * Whether a cold swap parks the old unit instead of stopping it (swaps.sleepMode): the old unit runs an
 * engine with a sleep mode and was started for it, serves now, the host's RAM can take its weights, and
 * the front door has a second slot for the new unit (the parked one keeps its port). Undefined when the
 * question does not arise (sleep mode off, or the old unit's engine has none).
 */
function planPark(input: PlanInput, cold: boolean): ClientPlan["park"] {
  if (input.sleepMode !== true) return undefined;
  const old = input.host.currentUnit;
  if (!old.exists) return undefined;
  const oldEngine = engineOfExecStart(old.execStart);
  if (oldEngine.sleep === undefined) return undefined;
  const no = (why: string) => ({ will: false, why: `${old.name} is stopped, not parked: ${why}` });
  if (!cold) return no("the new model starts beside it (blue/green)");
  if (!old.active) return no("it does not serve now");
  if (!oldEngine.sleep.parkable(old.text))
    return no(
      `it was not started for ${oldEngine.name}'s sleep mode (it predates swaps.sleepMode): the next swap can park this one`,
    );
  const standby = input.blueGreen?.standby;
  if (standby === undefined || !("server" in standby))
    return no(
      `${standby?.missing ?? "the host has no front door"}: the new unit needs a port of its own while the parked one keeps its`,
    );
  // level 1 moves the weights to host RAM; what the old unit holds on its GPUs is at least that
  const held = input.host.gpus.reduce((sum, g) => sum + g.memoryUsedMiB, 0) * 2 ** 20;
  const available = input.host.memoryAvailableBytes ?? 0;
  if (available < held)
    return no(
      `host RAM available (${formatGiB(available)}) is less than the ${formatGiB(held)} it holds on its GPUs, which its weights would move to`,
    );
  return {
    will: true,
    port: standby.port,
    why: `${old.name} is parked, not stopped (${oldEngine.name} sleep mode): its weights move to host RAM (${formatGiB(available)} available, it holds ${formatGiB(held)} on its GPUs), so a new model that fails is stopped and it wakes in seconds; it stops once the new model is released. The new unit listens on the front door's ${standby.server} slot (port ${standby.port})`,
  };
}
