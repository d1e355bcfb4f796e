import type { GpuInfo } from "../gpu/nvidia-smi.ts";
import { formatGiB } from "./byte-units.ts";
import { MIN_KV_FRACTION, type VramEstimate } from "./choose-tp.ts";

/** A GPU holding more than this is in use (the driver's own reservation is a few hundred MiB). */
const IN_USE_MIB = 1024;
const MiB = 1024 * 1024;

/**
 * Why this swap is cold, in numbers from nvidia-smi (per-GPU used and free memory): whether the new
 * model could run beside the old one on GPUs nobody uses, or on the same GPUs in the memory they leave
 * free. Every swap is cold today (blue/green is not built yet): when it would fit, the line says so, so
 * the approver knows the downtime is modelswap's limit, not the hardware's.
 */
export function whyCold(gpus: readonly GpuInfo[], vram: VramEstimate): string {
  const inUse = gpus.filter((g) => g.memoryUsedMiB > IN_USE_MIB);
  if (inUse.length === 0) return "no GPU holds a model now: nothing is served while the new one loads anyway";
  const idle = gpus.length - inUse.length;
  const need = vram.weightsPerGpuBytes;
  const kvFloor = MIN_KV_FRACTION * vram.gpuMemoryBytes;
  const leastFree = Math.min(...inUse.map((g) => g.memoryFreeMiB)) * MiB;
  const mostUsed = Math.max(...inUse.map((g) => g.memoryUsedMiB)) * MiB;
  const held = `the model serving now holds up to ${formatGiB(mostUsed)} of each of its ${inUse.length} GPU${inUse.length === 1 ? "" : "s"}`;
  if (idle >= vram.tp)
    return `${held}, and ${idle} GPUs are idle: enough for the new model at tp ${vram.tp} beside it (blue/green on spare GPUs), which modelswap does not run yet`;
  if (leastFree >= need + kvFloor)
    return `${held}, leaving ${formatGiB(leastFree)} free on each: the new model's ${formatGiB(need)}/GPU of weights and a KV cache fit beside it (blue/green on shared GPUs), which modelswap does not run yet`;
  return `${held} (SGLang takes --mem-fraction-static of the memory at start), leaving ${formatGiB(leastFree)}; the new model needs ${formatGiB(need)}/GPU for its weights alone${idle === 0 ? ", and no GPU is idle" : `, and only ${idle} GPU${idle === 1 ? " is" : "s are"} idle`}: both cannot run at once`;
}
