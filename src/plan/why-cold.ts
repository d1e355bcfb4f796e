import type { GpuInfo } from "../gpu/nvidia-smi.ts";
import { formatGiB } from "./byte-units.ts";
import { MIN_KV_FRACTION, type VramEstimate } from "./choose-tp.ts";

/** A GPU holding more than this is in use (the driver's own reservation is a few hundred MiB). */
export const IN_USE_MIB = 1024;
const MiB = 1024 * 1024;

/**
 * Why this swap is cold, in numbers from nvidia-smi (per-GPU used and free memory), when the new model
 * cannot run beside the old one (src/plan/client-mode.ts decides): nothing is served now, or not enough
 * GPUs leave it room.
 */
export function whyCold(gpus: readonly GpuInfo[], vram: VramEstimate): string {
  const inUse = gpus.filter((g) => g.memoryUsedMiB > IN_USE_MIB);
  if (inUse.length === 0) return "no GPU holds a model now: nothing is served while the new one loads anyway";
  const idle = gpus.length - inUse.length;
  const need = vram.weightsPerGpuBytes;
  const leastFree = Math.min(...inUse.map((g) => g.memoryFreeMiB)) * MiB;
  const mostUsed = Math.max(...inUse.map((g) => g.memoryUsedMiB)) * MiB;
  const held = `the model serving now holds up to ${formatGiB(mostUsed)} of each of its ${inUse.length} GPU${inUse.length === 1 ? "" : "s"}`;
  const reserve = vram.memory.reserveBytes(vram.staticFraction, vram.gpuMemoryBytes);
  const { memory } = vram;
  return `${held} (${memory.appliesTo.replace(/ it /, ` --${memory.setting} `)}), leaving ${formatGiB(leastFree)}; the new model at tp ${vram.tp} needs ${formatGiB(need)}/GPU for its weights, ${formatGiB(reserve)} ${memory.engine} keeps free and a KV cache of at least ${formatGiB(MIN_KV_FRACTION * vram.gpuMemoryBytes)}${idle === 0 ? ", and no GPU is idle" : `, and only ${idle} GPU${idle === 1 ? " is" : "s are"} idle`}: both cannot run at once`;
}
