import type { GatedMode, SimModelFile } from "./types.ts";

/**
 * The files every preset repository shares: the shape of a preset, the `.gitattributes` the Hub writes
 * into new repositories, a tiny but valid tokenizer.json, the model card, and shard names and sizes.
 */

export interface PresetSpec {
  id: string;
  license: string;
  gated: GatedMode;
  /** Real checkpoint: total weight bytes and number of shards (1 = a single `model.safetensors`). */
  claimedWeightBytes: number;
  claimedShards: number;
  /** Digits of the shard total in file names: 5 → `-of-00019`, 6 → `-of-000062`. */
  shardTotalDigits: number;
  layers: number;
  config: Record<string, unknown>;
  extraFiles: (scaled: boolean) => SimModelFile[];
  tokenizerConfig: Record<string, unknown>;
  /** Real tokenizer.json size (it is an LFS file on the Hub when > 10 MiB). 0 = no tokenizer.json. */
  tokenizerJsonBytes: number;
  safetensorsParameters: Record<string, number>;
  tags: string[];
  pipelineTag: string;
  /** Tensor names per layer for the index's weight_map (a representative subset). */
  layerTensors: (layer: number) => string[];
  baseModel?: string;
  description: string;
}

export const json = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;

export const GITATTRIBUTES = [
  "*.7z filter=lfs diff=lfs merge=lfs -text",
  "*.arrow filter=lfs diff=lfs merge=lfs -text",
  "*.bin filter=lfs diff=lfs merge=lfs -text",
  "*.bz2 filter=lfs diff=lfs merge=lfs -text",
  "*.ckpt filter=lfs diff=lfs merge=lfs -text",
  "*.ftz filter=lfs diff=lfs merge=lfs -text",
  "*.gz filter=lfs diff=lfs merge=lfs -text",
  "*.h5 filter=lfs diff=lfs merge=lfs -text",
  "*.joblib filter=lfs diff=lfs merge=lfs -text",
  "*.lfs.* filter=lfs diff=lfs merge=lfs -text",
  "*.mlmodel filter=lfs diff=lfs merge=lfs -text",
  "*.model filter=lfs diff=lfs merge=lfs -text",
  "*.msgpack filter=lfs diff=lfs merge=lfs -text",
  "*.npy filter=lfs diff=lfs merge=lfs -text",
  "*.npz filter=lfs diff=lfs merge=lfs -text",
  "*.onnx filter=lfs diff=lfs merge=lfs -text",
  "*.ot filter=lfs diff=lfs merge=lfs -text",
  "*.parquet filter=lfs diff=lfs merge=lfs -text",
  "*.pb filter=lfs diff=lfs merge=lfs -text",
  "*.pickle filter=lfs diff=lfs merge=lfs -text",
  "*.pkl filter=lfs diff=lfs merge=lfs -text",
  "*.pt filter=lfs diff=lfs merge=lfs -text",
  "*.pth filter=lfs diff=lfs merge=lfs -text",
  "*.rar filter=lfs diff=lfs merge=lfs -text",
  "*.safetensors filter=lfs diff=lfs merge=lfs -text",
  "saved_model/**/* filter=lfs diff=lfs merge=lfs -text",
  "*.tar.* filter=lfs diff=lfs merge=lfs -text",
  "*.tar filter=lfs diff=lfs merge=lfs -text",
  "*.tflite filter=lfs diff=lfs merge=lfs -text",
  "*.tgz filter=lfs diff=lfs merge=lfs -text",
  "*.wasm filter=lfs diff=lfs merge=lfs -text",
  "*.xz filter=lfs diff=lfs merge=lfs -text",
  "*.zip filter=lfs diff=lfs merge=lfs -text",
  "*.zst filter=lfs diff=lfs merge=lfs -text",
  "*tfevents* filter=lfs diff=lfs merge=lfs -text",
  "tokenizer.json filter=lfs diff=lfs merge=lfs -text",
  "",
].join("\n");

/** A small but valid tokenizers-format tokenizer.json (byte-level BPE with a handful of tokens). */
export function tinyTokenizerJson(specialTokens: string[]): string {
  const vocab: Record<string, number> = {};
  const base = ["!", '"', "#", "a", "b", "c", "Ġ", "Ġt", "he", "Ġthe", "Hello", "Ġworld", "4"];
  base.forEach((t, i) => {
    vocab[t] = i;
  });
  return json({
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: specialTokens.map((content, i) => ({
      id: base.length + i,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: { type: "NFC" },
    pre_tokenizer: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: null,
    decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: "BPE",
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: "",
      end_of_word_suffix: "",
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges: [
        ["Ġ", "t"],
        ["h", "e"],
        ["Ġt", "he"],
      ],
    },
  });
}

export function readme(spec: PresetSpec, license: string, gated: GatedMode): string {
  const front = [
    "---",
    `license: ${license}`,
    "library_name: transformers",
    `pipeline_tag: ${spec.pipelineTag}`,
    ...(spec.baseModel ? ["base_model:", `- ${spec.baseModel}`] : []),
    ...(gated
      ? ["extra_gated_prompt: You agree to the license and acceptable use policy of this model."]
      : []),
    "---",
  ];
  return `${front.join("\n")}\n\n# ${spec.id.split("/")[1]}\n\n${spec.description}\n`;
}

/** Splits `total` bytes over `n` shards: equal-ish shards with a little jitter, the last one smaller. */
export function shardSizes(total: number, n: number): number[] {
  if (n === 1) return [total];
  const base = Math.floor(total / (n - 0.35));
  const sizes: number[] = [];
  let left = total;
  for (let i = 0; i < n - 1; i++) {
    const jitter = Math.floor(base * 0.004 * (((i * 7) % 5) - 2));
    const size = Math.min(left - (n - 1 - i), Math.max(1, base + jitter));
    sizes.push(size);
    left -= size;
  }
  sizes.push(Math.max(1, left));
  return sizes;
}

export function shardName(i: number, n: number, totalDigits: number): string {
  return `model-${String(i + 1).padStart(5, "0")}-of-${String(n).padStart(totalDigits, "0")}.safetensors`;
}
