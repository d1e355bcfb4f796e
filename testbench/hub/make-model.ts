import {
  GITATTRIBUTES,
  json,
  type PresetSpec,
  readme,
  shardName,
  shardSizes,
  tinyTokenizerJson,
} from "./model-files.ts";
import { KIMI_K2_INT4 } from "./presets-kimi.ts";
import { LLAMA_1B, TINY } from "./presets-llama.ts";
import { QWEN3_FP8, QWEN35_NVFP4 } from "./presets-qwen.ts";
import { defaultSha } from "./sim-hub.ts";
import type { GatedMode, SimModel, SimModelFile } from "./types.ts";

/**
 * Realistic model repositories for the simulated Hub: the config.json, quantization files, shard
 * names, index and tokenizer files of real checkpoints. Weights are scaled down by default (a few MB,
 * so tests can really download them); `sizes: "claimed"` gives the real sizes (only numbers: nothing
 * is generated unless someone downloads it).
 */

export type ModelPreset =
  | "qwen3.5-moe-nvfp4"
  | "kimi-k2-int4"
  | "llama-bf16-small"
  | "qwen3-fp8-dense"
  | "tiny";

export interface MakeModelOptions {
  /** Repository id. Default: the real checkpoint's id. */
  id?: string;
  /** "scaled" (default): small weights; "claimed": the real checkpoint's sizes and shard count. */
  sizes?: "scaled" | "claimed";
  /** Total bytes of all weight shards when scaled. Default 6 MiB. */
  weightBytes?: number;
  /** Number of safetensors shards. Default: the real count when claimed, 3 when scaled (1 for single-file models). */
  shards?: number;
  /**
   * Scaled like the real checkpoint: its shard count and names, each shard 1/scale of its claimed size
   * (rounded; at least 1 byte). Replaces `weightBytes` and `shards`; the bot learns the scale from
   * bench.weightScale. Other files are as when scaled.
   */
  scale?: number;
  gated?: GatedMode;
  approvedTokens?: string[];
  private?: boolean;
  license?: string;
  sha?: string;
  revisions?: Record<string, string>;
}

const PRESETS: Record<ModelPreset, PresetSpec> = {
  "qwen3.5-moe-nvfp4": QWEN35_NVFP4,
  "kimi-k2-int4": KIMI_K2_INT4,
  "llama-bf16-small": LLAMA_1B,
  "qwen3-fp8-dense": QWEN3_FP8,
  tiny: TINY,
};

/** The preset's published name (id) and headline numbers, for docs and plan tests. */
export function presetInfo(kind: ModelPreset): {
  id: string;
  claimedWeightBytes: number;
  claimedShards: number;
} {
  const spec = PRESETS[kind];
  return { id: spec.id, claimedWeightBytes: spec.claimedWeightBytes, claimedShards: spec.claimedShards };
}

/** A realistic model repository for `SimHub.addModel`. */
export function makeModel(kind: ModelPreset, opts: MakeModelOptions = {}): SimModel {
  const spec = PRESETS[kind];
  const claimed = opts.sizes === "claimed";
  const id = opts.id ?? spec.id;
  const license = opts.license ?? spec.license;
  const gated = opts.gated ?? spec.gated;
  const scale = opts.scale;
  if (scale !== undefined && (!Number.isInteger(scale) || scale < 1))
    throw new Error(`scale must be a positive integer, got ${scale}`);
  const shards =
    scale !== undefined
      ? spec.claimedShards
      : (opts.shards ?? (claimed ? spec.claimedShards : spec.claimedShards === 1 ? 1 : 3));
  if (!Number.isInteger(shards) || shards < 1)
    throw new Error(`shards must be a positive integer, got ${shards}`);

  const sizes =
    scale !== undefined
      ? shardSizes(spec.claimedWeightBytes, shards).map((s) => Math.max(1, Math.round(s / scale)))
      : shardSizes(claimed ? spec.claimedWeightBytes : (opts.weightBytes ?? 6 * 1024 * 1024), shards);
  const weightBytes = sizes.reduce((sum, s) => sum + s, 0);
  const names =
    shards === 1 ? ["model.safetensors"] : sizes.map((_, i) => shardName(i, shards, spec.shardTotalDigits));
  const files: SimModelFile[] = [
    { path: ".gitattributes", size: 0, content: GITATTRIBUTES },
    { path: "README.md", size: 0, content: readme({ ...spec, id }, license, gated) },
    { path: "config.json", size: 0, content: json(spec.config) },
    { path: "tokenizer_config.json", size: 0, content: json(spec.tokenizerConfig) },
    ...spec.extraFiles(!claimed),
    ...names.map((path, i) => ({ path, size: sizes[i]!, lfs: true })),
  ];
  if (spec.tokenizerJsonBytes > 0) {
    const specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"];
    files.push(
      claimed
        ? {
            path: "tokenizer.json",
            size: spec.tokenizerJsonBytes,
            lfs: spec.tokenizerJsonBytes > 10 * 1024 * 1024,
          }
        : { path: "tokenizer.json", size: 0, content: tinyTokenizerJson(specials) },
    );
  }
  if (shards > 1) {
    const weightMap: Record<string, string> = {};
    weightMap["model.embed_tokens.weight"] = names[0]!;
    for (let l = 0; l < spec.layers; l++) {
      const shard = names[Math.min(shards - 1, Math.floor((l * shards) / spec.layers))]!;
      for (const tensor of spec.layerTensors(l)) weightMap[tensor] = shard;
    }
    weightMap["model.norm.weight"] = names[shards - 1]!;
    weightMap["lm_head.weight"] = names[shards - 1]!;
    files.push({
      path: "model.safetensors.index.json",
      size: 0,
      content: json({
        metadata: { total_size: Math.max(0, weightBytes - shards * 4096) },
        weight_map: weightMap,
      }),
    });
  }
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  for (const f of files) if (f.content !== undefined) f.size = Buffer.byteLength(f.content);

  const model: SimModel = {
    id,
    files,
    gated,
    license,
    tags: [...spec.tags, `license:${license}`],
    pipelineTag: spec.pipelineTag,
    library: "transformers",
    cardData: {
      license,
      library_name: "transformers",
      pipeline_tag: spec.pipelineTag,
      ...(spec.baseModel ? { base_model: [spec.baseModel] } : {}),
    },
    safetensorsParameters: spec.safetensorsParameters,
    sha: opts.sha ?? opts.revisions?.main ?? defaultSha(id),
    totalBytes: files.reduce((sum, f) => sum + f.size, 0),
  };
  if (opts.revisions !== undefined) model.revisions = opts.revisions;
  if (opts.approvedTokens !== undefined) model.approvedTokens = opts.approvedTokens;
  if (opts.private !== undefined) model.private = opts.private;
  return model;
}
