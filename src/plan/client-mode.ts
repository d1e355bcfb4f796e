import type { GpuInfo } from "../gpu/nvidia-smi.ts";
import { formatGiB } from "./byte-units.ts";
import { MIN_KV_FRACTION, type VramEstimate } from "./choose-tp.ts";
import type { ClientPlan } from "./types.ts";
import { IN_USE_MIB, whyCold } from "./why-cold.ts";

const MiB = 1024 * 1024;
/** A CUDA context and the allocator's slack beside another process (SGLang logs ≈ 0.6–0.9 GiB of it). */
const CONTEXT_BYTES = 1024 * MiB;

/** What the plan needs to choose: the host's GPUs, the new model's VRAM at its tp, and the front door. */
export interface ClientModeInput {
  gpus: readonly GpuInfo[];
  vram: VramEstimate;
  /**
   * The front door's other unit slot's port, when the host has one; else why blue/green cannot run
   * here (no front door, no standby slot).
   */
  standby: { port: number } | { missing: string };
  sharedBenchmark: "after-flip" | "reduced";
  flipBackSeconds: number;
  /** swaps.restartAtFullMemory: on shared GPUs, restart the new unit at full memory once the old one stops. */
  restartAtFullMemory?: boolean;
}

export type ClientMode =
  | { mode: "cold"; why: string }
  | { mode: "bluegreen"; why: string; blueGreen: NonNullable<ClientPlan["blueGreen"]> };

/**
 * The first `tp` consecutive entries of `free` (sorted most first) whose least is at least 90 % of their
 * most: with tp > 1 SGLang stops at start when a rank's free memory is below 90 % of another's
 * (model_runner.py init_torch_distributed, "Check memory for tensor parallelism"). Undefined when none.
 */
function balancedFrom(free: readonly number[], tp: number): number | undefined {
  for (let i = 0; i + tp <= free.length; i++) if (tp === 1 || free[i + tp - 1]! >= 0.9 * free[i]!) return i;
  return undefined;
}

/**
 * Blue/green or cold, from nvidia-smi's per-GPU used and free memory: the new unit can start beside the
 * old one when `tp` GPUs each leave it its weights and a KV cache of at least MIN_KV_FRACTION of the GPU,
 * with what SGLang keeps free for activations left free. Idle GPUs come first (`spare`: production loses
 * nothing, the unit runs at its usual fraction); else the GPUs with the most free memory (`shared`: the
 * unit starts with the fraction of fractionBeside, and serves with the smaller KV cache until its next
 * restart).
 */
export function chooseClientMode(input: ClientModeInput): ClientMode {
  const { gpus, vram } = input;
  const kvFloor = MIN_KV_FRACTION * vram.gpuMemoryBytes;
  const { memory } = vram;
  const reserve = memory.reserveBytes(vram.staticFraction, vram.gpuMemoryBytes);
  const idle = (g: GpuInfo) => g.memoryUsedMiB <= IN_USE_MIB;
  // what the new unit's SGLang measures free at its start: nvidia-smi's free, less its own CUDA context
  const freeAtStart = (g: GpuInfo) => g.memoryFreeMiB * MiB - (idle(g) ? 0 : CONTEXT_BYTES);
  const kvBeside = (g: GpuInfo) =>
    idle(g)
      ? Math.min(vram.kvPerGpuBytes, freeAtStart(g) - vram.weightsPerGpuBytes - reserve)
      : memory.beside(freeAtStart(g), vram.gpuMemoryBytes, reserve, vram.weightsPerGpuBytes).kvPerGpuBytes;
  // most free first (idle GPUs lead): the first tp of them that SGLang's balance check takes
  const usable = gpus
    .filter((g) => g.memoryTotalMiB * MiB >= vram.gpuMemoryBytes && kvBeside(g) >= kvFloor)
    .sort((a, b) => freeAtStart(b) - freeAtStart(a) || a.index - b.index);
  const inUse = gpus.filter((g) => !idle(g));
  if (inUse.length === 0 || usable.length < vram.tp) return { mode: "cold", why: whyCold(gpus, vram) };
  const start = balancedFrom(usable.map(freeAtStart), vram.tp);
  if (start === undefined) {
    return {
      mode: "cold",
      why: `${usable.length} GPUs could hold the new model beside the model serving now, but no ${vram.tp} of them have free memory within 10 % of each other: SGLang refuses unbalanced ranks at start ("The memory capacity is unbalanced", model_runner.py), so the swap is cold`,
    };
  }
  const chosen = usable.slice(start, start + vram.tp).sort((a, b) => a.index - b.index);
  const spare = chosen.every(idle);
  // shared: one fraction for all ranks, from the GPU with the least free (SGLang takes the minimum too)
  const beside = spare
    ? undefined
    : memory.beside(
        Math.min(...chosen.map(freeAtStart)),
        vram.gpuMemoryBytes,
        reserve,
        vram.weightsPerGpuBytes,
      );
  const kv = beside?.kvPerGpuBytes ?? Math.min(...chosen.map(kvBeside));
  const devices = chosen.map((g) => g.index);
  const where = `GPU${devices.length === 1 ? "" : "s"} ${devices.join(",")}`;
  const fit = spare
    ? `${where} are idle: the new model (tp ${vram.tp}, ${formatGiB(vram.weightsPerGpuBytes)}/GPU of weights) starts on them beside the model serving now (blue/green on spare GPUs)`
    : `the model serving now leaves ${formatGiB(Math.min(...chosen.map((g) => g.memoryFreeMiB * MiB)))} free on ${where}: the new model's ${formatGiB(vram.weightsPerGpuBytes)}/GPU of weights and a ${formatGiB(kv)}/GPU KV cache (${formatGiB(vram.kvPerGpuBytes)} alone) fit beside it at --${memory.setting} ${beside!.fraction} (${memory.appliesTo}), which keeps the ${formatGiB(reserve)} it keeps free alone (blue/green sharing GPUs; the smaller KV cache stays until the new unit's next restart)`;
  if ("missing" in input.standby)
    return { mode: "cold", why: `${fit}, but ${input.standby.missing}: so the swap is cold` };
  return {
    mode: "bluegreen",
    why: fit,
    blueGreen: {
      gpus: spare ? "spare" : "shared",
      devices,
      port: input.standby.port,
      kvPerGpuBytes: kv,
      fullKvPerGpuBytes: vram.kvPerGpuBytes,
      ...(beside === undefined ? {} : { memFractionStatic: beside.fraction }),
      // the unit text is rendered with the plan's (src/plan/plan-unit.ts)
      ...(beside !== undefined && input.restartAtFullMemory === true ? { restart: { unitText: "" } } : {}),
      benchmark: spare ? "before-flip" : input.sharedBenchmark,
      flipBackSeconds: input.flipBackSeconds,
    },
  };
}
