import type { EngineMemory } from "../engine/engine-setup.ts";
import { engineFor } from "../engine/engines.ts";
import type { GpuInfo } from "../gpu/nvidia-smi.ts";
import { formatGiB } from "./byte-units.ts";
import type { ModelFacts, PlanCheck } from "./types.ts";

/**
 * Tensor parallelism and the VRAM fit.
 *
 * Memory model (per GPU, at tp GPUs):
 *   weights   = weightBytes / tp × 1.05     (5% for buffers, replicated embeddings and norms)
 *   KV cache  = what the engine's share of the GPU leaves after the weights (EngineMemory.kvAlone:
 *               SGLang's `--mem-fraction-static` × memory − weights, its default 0.88 above 100 GiB,
 *               0.85 above 40 GiB, else 0.80; vLLM's `--gpu-memory-utilization` 0.9 × memory − weights
 *               − its activations)
 * It fits when the KV cache keeps at least 5% of the GPU's memory, i.e. weights ≤ (fraction − 0.05) ×
 * memory. The GPUs are the first tp of the host (SGLang starts at GPU 0); memory held by the service
 * serving now does not count, since the switch stops it first.
 */

export const WEIGHT_OVERHEAD = 1.05;
export const MIN_KV_FRACTION = 0.05;
const MiB = 1024 * 1024;

/** SGLang's default --mem-fraction-static for a GPU of this size. */
export function staticFraction(gpuMemoryBytes: number): number {
  return engineFor("sglang").memory.defaultFraction(gpuMemoryBytes);
}

/**
 * The context the KV cache must hold at least one sequence of: the flags' context-length, or (for an
 * engine that refuses to start otherwise, vLLM) the model's own maximum. `kvBytesPerToken` is per GPU.
 */
export interface ContextNeed {
  tokens: number;
  /** Where the figure comes from: "context-length 32768 (swap (--set))", "the model's max_position_embeddings". */
  why: string;
  /** Bytes of KV cache one token takes on each GPU at this tp. */
  kvBytesPerToken(tp: number): number;
}

/**
 * KV cache per token per GPU: K and V of each layer's KV heads on this GPU (a KV head is replicated when
 * tp exceeds their number), 2 bytes each (1 with an FP8 KV cache); MLA keeps one compressed vector per
 * token and layer, the same on every GPU. Only the layers that keep every token count
 * (ModelFacts.fullAttentionLayers: not sliding-window, chunked or linear-attention ones).
 */
export function kvBytesPerToken(facts: ModelFacts, tp: number, bytesPerValue = 2): number {
  const layers = facts.fullAttentionLayers ?? facts.layers;
  if (facts.kvLoraRank !== undefined)
    return (facts.kvLoraRank + (facts.qkRopeHeadDim ?? 0)) * layers * bytesPerValue;
  const headsHere = Math.max(1, Math.ceil(facts.kvHeads / tp));
  return 2 * layers * headsHere * facts.headDim * bytesPerValue;
}

export interface VramEstimate {
  tp: number;
  weightsPerGpuBytes: number;
  /** The smallest GPU among the tp used. */
  gpuMemoryBytes: number;
  /** The engine's share of the GPU it runs at (its default). */
  staticFraction: number;
  /** The engine's memory model the estimate used. */
  memory: EngineMemory;
  /** KV cache per GPU (negative when the weights do not fit). */
  kvPerGpuBytes: number;
  fits: boolean;
  /** The context the KV cache must hold, and the bytes per GPU it takes (when one is asked for). */
  context?: { tokens: number; why: string; needBytes: number; holds: boolean };
}

export function estimateVram(
  weightBytes: number,
  gpus: readonly GpuInfo[],
  tp: number,
  memory: EngineMemory = engineFor("sglang").memory,
  need?: ContextNeed,
): VramEstimate {
  const used = gpus.slice(0, Math.max(1, tp));
  const gpuMemoryBytes = used.length === 0 ? 0 : Math.min(...used.map((g) => g.memoryTotalMiB)) * MiB;
  const fraction = memory.defaultFraction(gpuMemoryBytes);
  const weightsPerGpuBytes = (weightBytes / tp) * WEIGHT_OVERHEAD;
  const kvPerGpuBytes = memory.kvAlone(fraction, gpuMemoryBytes, weightsPerGpuBytes);
  const weightsFit = gpuMemoryBytes > 0 && kvPerGpuBytes >= MIN_KV_FRACTION * gpuMemoryBytes;
  const needBytes = need === undefined ? 0 : need.tokens * need.kvBytesPerToken(tp);
  const holds = need === undefined || kvPerGpuBytes >= needBytes;
  return {
    tp,
    weightsPerGpuBytes,
    gpuMemoryBytes,
    staticFraction: fraction,
    memory,
    kvPerGpuBytes,
    fits: weightsFit && holds,
    ...(need === undefined ? {} : { context: { tokens: need.tokens, why: need.why, needBytes, holds } }),
  };
}

/** Why tp does not split this model's attention heads, or undefined when it does. */
export function headsProblem(facts: ModelFacts, tp: number): string | undefined {
  if (facts.attentionHeads % tp !== 0) {
    return `tp ${tp} does not divide the ${facts.attentionHeads} attention heads`;
  }
  const kv = facts.kvHeads;
  if (kv > 0 && tp <= kv && kv % tp !== 0) return `tp ${tp} does not divide the ${kv} KV heads`;
  if (kv > 0 && tp > kv && tp % kv !== 0) {
    return `tp ${tp} is not a multiple of the ${kv} KV heads (above ${kv}, each KV head is replicated on tp/${kv} GPUs)`;
  }
  return undefined;
}

function headsDetail(facts: ModelFacts, tp: number): string {
  const kv = facts.kvHeads;
  const kvPart =
    kv > 0 && tp > kv
      ? `${kv} KV heads, each replicated on ${tp / kv} GPUs`
      : `${kv} KV heads → ${kv / tp} per GPU`;
  return `tp ${tp}: ${facts.attentionHeads} attention heads → ${facts.attentionHeads / tp} per GPU; ${kvPart}`;
}

export function vramDetail(v: VramEstimate, weightBytes: number): string {
  const base = `${formatGiB(v.weightsPerGpuBytes)}/GPU of weights at tp ${v.tp} (${formatGiB(weightBytes)} ÷ ${v.tp} + 5%) on ${formatGiB(v.gpuMemoryBytes)} GPUs`;
  const ctx = v.context;
  const context =
    ctx === undefined
      ? ""
      : `; one ${ctx.tokens}-token sequence (${ctx.why}) needs ${formatGiB(ctx.needBytes)}/GPU of KV cache`;
  if (v.fits) {
    return `${base}; ${formatGiB(v.kvPerGpuBytes)}/GPU left for KV cache at ${v.memory.setting} ${v.staticFraction}${context}`;
  }
  if (ctx !== undefined && !ctx.holds && v.kvPerGpuBytes >= MIN_KV_FRACTION * v.gpuMemoryBytes) {
    return `${base}: ${formatGiB(v.kvPerGpuBytes)}/GPU left for KV cache, but ${context.slice(2)}: does not fit`;
  }
  const most = v.weightsPerGpuBytes + v.kvPerGpuBytes - MIN_KV_FRACTION * v.gpuMemoryBytes;
  return `${base}: does not fit: weights may use at most ${formatGiB(most)}/GPU to leave ${Math.round(MIN_KV_FRACTION * 100)}% for KV cache`;
}

export interface TpChoice {
  tp: number;
  reason: string;
  vram: VramEstimate;
  tpCheck: PlanCheck;
  vramCheck: PlanCheck;
}

/**
 * The tp to serve with. Default: all GPUs of the host when the weights fit and tp splits the heads
 * (more GPUs, more KV cache); else the smallest power of two that fits and splits them. A requested tp
 * is checked and kept as asked: when it is wrong the checks fail and say which tp would work.
 */
export function chooseTp(
  facts: ModelFacts,
  gpus: readonly GpuInfo[],
  requestedTp?: number,
  memory: EngineMemory = engineFor("sglang").memory,
  need?: ContextNeed,
): TpChoice {
  const n = gpus.length;
  const estimate = (tp: number) => estimateVram(facts.weightBytes, gpus, tp, memory, need);
  const valid = (tp: number) => headsProblem(facts, tp) === undefined && estimate(tp).fits;
  const all = Array.from({ length: n }, (_, i) => i + 1);
  const workable = all.filter(valid);
  const suggestion =
    workable.length > 0
      ? `use --tp ${orList(workable)} (these split the heads and fit the weights)`
      : undefined;

  if (n === 0) {
    const tp = requestedTp ?? 1;
    const problem = "nvidia-smi found no GPUs on the host";
    const fix = "check the NVIDIA driver on the host (nvidia-smi must list the GPUs)";
    return {
      tp,
      reason: problem,
      vram: estimate(tp),
      tpCheck: { id: "tp", ok: false, detail: problem, fix },
      vramCheck: { id: "vram", ok: false, detail: problem, fix },
    };
  }

  if (requestedTp !== undefined) {
    const tp = requestedTp;
    const vram = estimate(tp);
    const sizeProblem =
      !Number.isInteger(tp) || tp < 1
        ? `tp ${tp} is not a positive whole number`
        : tp > n
          ? `tp ${tp} needs ${tp} GPUs; ${gpus[0]!.name} × ${n} on this host`
          : undefined;
    const problem = sizeProblem ?? headsProblem(facts, tp);
    const fitsProblem = sizeProblem === undefined && !vram.fits;
    const fix = suggestion ?? neededGpus(facts, gpus, memory, need);
    return {
      tp,
      reason: `requested with --tp ${tp}`,
      vram,
      tpCheck:
        problem === undefined
          ? { id: "tp", ok: true, detail: `${headsDetail(facts, tp)} (requested)` }
          : { id: "tp", ok: false, detail: problem, fix },
      vramCheck:
        sizeProblem !== undefined
          ? { id: "vram", ok: false, detail: `not estimated: ${sizeProblem}`, fix }
          : fitsProblem
            ? { id: "vram", ok: false, detail: vramDetail(vram, facts.weightBytes), fix }
            : { id: "vram", ok: true, detail: vramDetail(vram, facts.weightBytes) },
    };
  }

  let tp: number;
  let reason: string;
  if (valid(n)) {
    tp = n;
    reason =
      n === 1
        ? "the host's one GPU: the weights fit"
        : `all ${n} GPUs: the weights fit and ${n} splits the heads; more GPUs leave more memory for KV cache`;
  } else {
    const why = headsProblem(facts, n) ?? `the weights do not fit at tp ${n}`;
    const pow2 = all.filter((t) => (t & (t - 1)) === 0 && valid(t));
    if (pow2.length > 0) {
      tp = pow2[0]!;
      reason = `not all ${n} GPUs: ${why}; ${tp} is the smallest power of two that fits and splits the heads`;
    } else {
      tp = workable[0] ?? n;
      reason =
        workable.length > 0
          ? `not all ${n} GPUs: ${why}; no power of two works, ${tp} does`
          : `no tp on this host both fits the weights and splits the heads (${why})`;
    }
  }
  const vram = estimate(tp);
  const heads = headsProblem(facts, tp);
  const fix = suggestion ?? neededGpus(facts, gpus, memory, need);
  return {
    tp,
    reason,
    vram,
    tpCheck:
      heads === undefined
        ? { id: "tp", ok: true, detail: headsDetail(facts, tp) }
        : { id: "tp", ok: false, detail: heads, fix },
    vramCheck: vram.fits
      ? { id: "vram", ok: true, detail: vramDetail(vram, facts.weightBytes) }
      : { id: "vram", ok: false, detail: vramDetail(vram, facts.weightBytes), fix },
  };
}

/** The fix when no tp on this host works: the smallest tp of such GPUs that would. */
function neededGpus(
  facts: ModelFacts,
  gpus: readonly GpuInfo[],
  memory: EngineMemory,
  need: ContextNeed | undefined,
): string {
  const name = gpus[0]?.name ?? "GPU";
  const limit = Math.max(64, facts.attentionHeads);
  // a context the weights leave no room for: the longest one that fits on all of this host's GPUs
  const all = gpus.length > 0 ? estimateVram(facts.weightBytes, gpus, gpus.length, memory) : undefined;
  if (need !== undefined && all?.fits === true && headsProblem(facts, gpus.length) === undefined) {
    const most = Math.floor(all.kvPerGpuBytes / need.kvBytesPerToken(gpus.length) / 1024) * 1024;
    return `a ${need.tokens}-token context (${need.why}) does not fit beside the weights; at tp ${gpus.length} about ${most} tokens do: set context-length to ${most} or less (the model's profile, or --set context-length=${most} where swaps.settable allows it), or choose a bigger host with --host`;
  }
  for (let tp = gpus.length + 1; tp <= limit; tp++) {
    if (
      headsProblem(facts, tp) === undefined &&
      estimateVram(facts.weightBytes, gpus, tp, memory, need).fits
    ) {
      return `the model needs tp ${tp}: ${tp} × ${name} (this host has ${gpus.length}); choose a bigger host with --host, or a smaller checkpoint`;
    }
  }
  return `no number of ${name} up to ${limit} splits the heads and fits the weights; choose another host with --host`;
}

function orList(values: readonly number[]): string {
  if (values.length === 1) return String(values[0]);
  return `${values.slice(0, -1).join(", ")} or ${values.at(-1)}`;
}
