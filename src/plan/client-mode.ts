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
}

export type ClientMode =
  | { mode: "cold"; why: string }
  | { mode: "bluegreen"; why: string; blueGreen: NonNullable<ClientPlan["blueGreen"]> };

/**
 * Blue/green or cold, from nvidia-smi's per-GPU used and free memory: the new unit can start beside the
 * old one when `tp` GPUs each leave it its weights and a KV cache of at least MIN_KV_FRACTION of the GPU.
 * SGLang sizes the KV cache at start from what is free then (model_runner's profile_max_num_token:
 * free after the weights − total × (1 − mem_fraction_static)), so beside the old unit it gets what the
 * old one leaves. Idle GPUs come first (`spare`: production loses nothing); else the GPUs with the most
 * free memory (`shared`: a smaller KV cache until the new unit's next restart).
 */
export function chooseClientMode(input: ClientModeInput): ClientMode {
  const { gpus, vram } = input;
  const kvFloor = MIN_KV_FRACTION * vram.gpuMemoryBytes;
  const reserve = (1 - vram.staticFraction) * vram.gpuMemoryBytes;
  const kvBeside = (g: GpuInfo) =>
    Math.min(
      vram.kvPerGpuBytes,
      g.memoryFreeMiB * MiB -
        vram.weightsPerGpuBytes -
        reserve -
        (g.memoryUsedMiB > IN_USE_MIB ? CONTEXT_BYTES : 0),
    );
  const usable = gpus
    .filter((g) => g.memoryTotalMiB * MiB >= vram.gpuMemoryBytes && kvBeside(g) >= kvFloor)
    .sort((a, b) => {
      const idle = Number(b.memoryUsedMiB <= IN_USE_MIB) - Number(a.memoryUsedMiB <= IN_USE_MIB);
      return idle !== 0 ? idle : b.memoryFreeMiB - a.memoryFreeMiB || a.index - b.index;
    });
  const inUse = gpus.filter((g) => g.memoryUsedMiB > IN_USE_MIB);
  if (inUse.length === 0 || usable.length < vram.tp) return { mode: "cold", why: whyCold(gpus, vram) };
  const chosen = usable.slice(0, vram.tp).sort((a, b) => a.index - b.index);
  const spare = chosen.every((g) => g.memoryUsedMiB <= IN_USE_MIB);
  const kv = Math.min(...chosen.map(kvBeside));
  const devices = chosen.map((g) => g.index);
  const where = `GPU${devices.length === 1 ? "" : "s"} ${devices.join(",")}`;
  const fit = spare
    ? `${where} are idle: the new model (tp ${vram.tp}, ${formatGiB(vram.weightsPerGpuBytes)}/GPU of weights) starts on them beside the model serving now (blue/green on spare GPUs)`
    : `the model serving now leaves ${formatGiB(Math.min(...chosen.map((g) => g.memoryFreeMiB * MiB)))} free on ${where}: the new model's ${formatGiB(vram.weightsPerGpuBytes)}/GPU of weights and a ${formatGiB(kv)}/GPU KV cache (${formatGiB(vram.kvPerGpuBytes)} alone) fit beside it (blue/green sharing GPUs; the smaller KV cache stays until the new unit's next restart)`;
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
      benchmark: spare ? "before-flip" : input.sharedBenchmark,
      flipBackSeconds: input.flipBackSeconds,
    },
  };
}
