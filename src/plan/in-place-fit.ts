import type { ModelFacts } from "./types.ts";

/**
 * Whether a new revision can be loaded into the engine that serves the old one, in place (SGLang's
 * update_weights_from_disk, vLLM's reload_weights): the engine reads the new files into the parameters it
 * already has, so each must exist with the same shape and dtype. That holds when the architecture, the
 * layer, head and expert counts, the hidden and head sizes, and the quantization (format, method, scheme,
 * block and group size) are the same, and the checkpoints hold the same number of bytes. The engine
 * refuses a misfit itself (SGLang: 400 "Failed to update weights: Attempted to load weight (…) into
 * parameter (…)", rolling back), but only after the requests were held for it; this decides before.
 *
 * Some formats load in place without an error and serve wrong weights; they never fit:
 * - MXFP4 MoE: sglang#39472 (open);
 * - FP8 with a scale per channel (and UE8M0 scales, which the facts do not tell apart yet): sglang#30749,
 *   crashes or silently serves the raw scales;
 * - NVFP4: fixed by sglang PRs #18085 (2026-02) and #25190 (2026-05); the engine build's version is not
 *   checked against them yet, so it does not fit either.
 */
export type InPlaceFit = { fits: true } | { fits: false; why: string };

const SAME: readonly [keyof ModelFacts, string][] = [
  ["architecture", "architecture"],
  ["layers", "layer count"],
  ["attentionHeads", "attention heads"],
  ["kvHeads", "KV heads"],
  ["hiddenSize", "hidden size"],
  ["headDim", "head size"],
  ["experts", "expert count"],
  ["quantization", "quantization"],
];

export function inPlaceFit(served: ModelFacts, next: ModelFacts): InPlaceFit {
  for (const [field, name] of SAME) {
    if (served[field] !== next[field])
      return {
        fits: false,
        why: `its ${name} differs (${show(served[field])} served, ${show(next[field])} new)`,
      };
  }
  const [a, b] = [served.quant, next.quant];
  if (a === undefined || b === undefined)
    return {
      fits: false,
      why: "the served model's quantization details are not on record (planned before they were kept)",
    };
  if (
    a.method !== b.method ||
    a.scheme !== b.scheme ||
    a.groupSize !== b.groupSize ||
    (a.blockSize ?? []).join("×") !== (b.blockSize ?? []).join("×")
  )
    return {
      fits: false,
      why: `its quantization differs (${a.description} served, ${b.description} new)`,
    };
  if (served.weightBytes !== next.weightBytes)
    return {
      fits: false,
      why: `its checkpoint holds ${next.weightBytes} bytes against the served one's ${served.weightBytes}: some tensors differ in shape or dtype`,
    };
  const unsafe = unsafeInPlace(next);
  return unsafe === undefined ? { fits: true } : { fits: false, why: unsafe };
}

/** Why this format must not be loaded in place (the engine would answer success and serve wrong weights). */
function unsafeInPlace(facts: ModelFacts): string | undefined {
  if (facts.quantization === "mxfp4")
    return "MXFP4 weights load in place without an error and serve wrong ones (sglang#39472)";
  if (facts.quantization === "fp8" && facts.quant?.scheme === "channel")
    return "FP8 with a scale per channel loads in place wrongly: a crash, or the raw scales served (sglang#30749)";
  if (facts.quantization === "nvfp4")
    return "NVFP4 loads in place right only with SGLang PRs #18085 and #25190 (2026-05), which the engine build is not checked for yet";
  return undefined;
}

function show(value: unknown): string {
  return value === undefined ? "none" : String(value);
}
