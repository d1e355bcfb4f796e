import type { EngineMemory, EngineSleep } from "../engine/engine-setup.ts";
import { engineOfExecStart } from "../engine/engines.ts";
import { formatGiB } from "./byte-units.ts";
import type { VramEstimate } from "./choose-tp.ts";
import type { chooseClientMode } from "./client-mode.ts";
import type { BlueGreenInput, PlanInput } from "./plan-input.ts";
import type { RecipeSetting } from "./recipes.ts";
import type { ClientPlan } from "./types.ts";

/**
 * The recipe's settings, and on shared GPUs the engine's memory fraction that leaves the GPU's
 * activation room free beside the unit serving now (it replaces one the recipe or the config set: theirs
 * is a share of an empty GPU).
 */
export function besideFraction(
  settings: RecipeSetting[],
  beside: { memFractionStatic?: number; kvPerGpuBytes: number } | undefined,
  memory: EngineMemory,
  what = "the model serving now",
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
      reason: `beside ${what} on the same GPUs: ${memory.appliesTo}, and ${fraction} leaves free what it keeps free alone (${formatGiB(beside!.kvPerGpuBytes)}/GPU of KV cache until its next restart)${replaced}`,
    },
  ];
}

/** The plan's client part: the mode chosen, and the front door's slots for it. */
export function clientPlan(
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
 * How fast a parked model's weights come back to a GPU: vLLM's blog (2025-10-26, its chart data) woke
 * Qwen3-235B-A22B-FP8 at tp 4 (about 59 GB a GPU) in 5.3–5.7 s, about 10 GB/s a GPU from pinned host RAM;
 * SGLang's resume from its CPU backup is of the same kind (8×H100: 4.85 s, torch_memory_saver PR #86).
 */
const WAKE_BYTES_PER_SECOND_PER_GPU = 10e9;

/**
 * What the plan leaves a parked engine on each GPU: its estimate and 512 MiB for the driver's rounding.
 * The new unit's memory share is sized beside this much; the switch parks only when nvidia-smi then shows
 * no more held (jobs/swap/stages/park.ts), or it stops the old unit (vLLM refuses to start with less free).
 */
export function parkedKeepsAtMost(sleep: EngineSleep): number {
  return sleep.keptPerGpuBytes + 512 * 2 ** 20;
}

/**
 * Whether a cold swap parks the old unit instead of stopping it (swaps.sleepMode): the old unit runs an
 * engine with a sleep mode and was started for it, serves now, the host's RAM can take its weights, the
 * new model still fits on the GPUs beside what a parked engine keeps there, and the front door has a
 * second slot for the new unit (the parked one keeps its port). Undefined when the question does not
 * arise (sleep mode off, or the old unit's engine has none). `vram` is the new model's estimate alone,
 * `memory` its engine's memory model.
 */
export function planPark(
  input: PlanInput,
  cold: boolean,
  vram: VramEstimate,
  memory: EngineMemory,
): ClientPlan["park"] {
  if (input.sleepMode !== true) return undefined;
  const old = input.host.currentUnit;
  if (!old.exists) return undefined;
  const oldEngine = engineOfExecStart(old.execStart);
  const sleep = oldEngine.sleep;
  if (sleep === undefined) return undefined;
  const no = (why: string) => ({ will: false, why: `${old.name} is stopped, not parked: ${why}` });
  if (!cold) return no("the new model starts beside it (blue/green)");
  if (!old.active) return no("it does not serve now");
  if (!sleep.parkable(old.text))
    return no(
      `it was not started for ${oldEngine.name}'s ${sleep.name} (it predates swaps.sleepMode): the next swap can park this one`,
    );
  const standby = input.blueGreen?.standby;
  if (standby === undefined || !("server" in standby))
    return no(
      `${standby?.missing ?? "the host has no front door"}: the new unit needs a port of its own while the parked one keeps its`,
    );
  // parking moves the weights to host RAM; what the old unit holds on its GPUs is at least that
  const held = input.host.gpus.reduce((sum, g) => sum + g.memoryUsedMiB, 0) * 2 ** 20;
  const available = input.host.memoryAvailableBytes ?? 0;
  if (available < held)
    return no(
      `host RAM available (${formatGiB(available)}) is less than the ${formatGiB(held)} it holds on its GPUs, which its weights would move to`,
    );
  // the new unit starts on GPUs where the parked engine keeps its CUDA context and buffers
  const kept = parkedKeepsAtMost(sleep);
  const reserve = memory.reserveBytes(vram.staticFraction, vram.gpuMemoryBytes);
  const beside = memory.beside(
    vram.gpuMemoryBytes - kept,
    vram.gpuMemoryBytes,
    reserve,
    vram.weightsPerGpuBytes,
  );
  const needKv = vram.context?.needBytes ?? 0;
  if (beside.kvPerGpuBytes <= needKv)
    return no(
      `a parked ${oldEngine.name} keeps ${formatGiB(kept)} a GPU (${sleep.keptSource}), and the new model's ${formatGiB(vram.weightsPerGpuBytes)}/GPU of weights would leave ${formatGiB(Math.max(0, beside.kvPerGpuBytes))}/GPU of KV cache beside it${needKv > 0 ? `, less than the ${formatGiB(needKv)} its context needs` : ""}`,
    );
  const heldPerGpu = Math.max(0, ...input.host.gpus.map((g) => g.memoryUsedMiB * 2 ** 20));
  const wakeSeconds = Math.max(1, Math.ceil(heldPerGpu / WAKE_BYTES_PER_SECOND_PER_GPU));
  return {
    will: true,
    port: standby.port,
    memFractionStatic: beside.fraction,
    kvPerGpuBytes: beside.kvPerGpuBytes,
    wakeSeconds,
    why: `${oldEngine.name} ${sleep.name}: ${old.name}'s weights move to host RAM (${formatGiB(available)} available; it holds ${formatGiB(held)} on its GPUs), so a new model that fails is stopped and it comes back in at most about ${wakeSeconds} s (${formatGiB(heldPerGpu)} a GPU at about 10 GB/s), not a reload from disk; it stops once the new model is released. Parked, it keeps ${formatGiB(kept)} a GPU (${sleep.keptSource}): the new model gets a ${formatGiB(beside.kvPerGpuBytes)}/GPU KV cache (${formatGiB(vram.kvPerGpuBytes)} alone). The new unit listens on the front door's ${standby.server} slot (port ${standby.port})`,
  };
}
