import { z } from "zod";

/** A model on the Hub as a swap names it: `org/name` at a revision (branch, tag or commit). */
export type { ModelRef } from "../grammar/model-ref.ts";

export const modelFileSchema = z.object({
  path: z.string(),
  size: z.number().int().nonnegative(),
  /** The LFS sha256 of large files (weights), when the Hub gives it. */
  sha256: z.string().optional(),
  /** The git blob id of a file kept in git, not LFS (the tree's `oid`): tells two revisions' copies apart. */
  oid: z.string().optional(),
});
export type ModelFile = z.infer<typeof modelFileSchema>;

/**
 * A model pinned to one commit, as a swap keeps it: what the plan, the download and its verification
 * need. The Hub's config files are read once, at resolve, into the plan's model facts and not kept (the
 * seeds' config.json alone is 8 MB).
 */
export const modelSummarySchema = z.object({
  repo: z.string(),
  revision: z.string(),
  /** The commit sha the revision resolved to: every later step uses this, never the branch name. */
  sha: z.string(),
  /**
   * The files the download fetches and verifies (weight-files.ts `downloadSet`): the weights and the files
   * beside them the engine reads. At most MAX_DOWNLOAD_FILES: a record's size does not grow with the
   * repository's. (Records from before kept every file of the repository here, and downloaded them all.)
   */
  files: z.array(modelFileSchema),
  /** Bytes of `files`: what the download fetches. */
  totalBytes: z.number().nonnegative(),
  /** Bytes of the *.safetensors weight files. */
  weightBytes: z.number().nonnegative(),
  /** The rest of the repository, left on the Hub: how many files, how many bytes (absent: none). */
  notFetched: z.object({ files: z.number().int().nonnegative(), bytes: z.number().nonnegative() }).optional(),
  gated: z.union([z.literal(false), z.literal("auto"), z.literal("manual")]),
  license: z.string().optional(),
});
export type ModelSummary = z.infer<typeof modelSummarySchema>;

/**
 * The configs besides config.json whose auto_map transformers follows into the repo's Python when an engine
 * loads a model with --trust-remote-code (both SGLang and vLLM load config, tokenizer and processor
 * through transformers' Auto classes): AutoTokenizer reads tokenizer_config.json (then config.json);
 * AutoProcessor processor_config.json, then preprocessor_config.json, then tokenizer_config.json;
 * AutoImageProcessor and AutoFeatureExtractor preprocessor_config.json; AutoVideoProcessor
 * video_preprocessor_config.json. generation_config.json names no code: GenerationConfig loads no class.
 * Resolve reads each one the repo has at its top level, where the engines look.
 */
export const CODE_CONFIG_FILES = [
  "tokenizer_config.json",
  "processor_config.json",
  "preprocessor_config.json",
  "video_preprocessor_config.json",
] as const;

/** What resolve learns from the Hub API, pinned to one commit: the summary and the config files. */
export interface ModelInfo extends ModelSummary {
  /** The repository's config.json. */
  config: Record<string, unknown>;
  /** hf_quant_config.json when present, else config.json's quantization_config, else undefined. */
  quantConfig: Record<string, unknown> | undefined;
  /**
   * The other configs whose auto_map may name the repo's Python (CODE_CONFIG_FILES: tokenizer_config.json,
   * processor_config.json, …), by file name: those the repo has, each read.
   */
  codeConfigs: Record<string, Record<string, unknown>>;
}

/** The part of a resolved model that is kept. */
export function summarize(info: ModelInfo): ModelSummary {
  const { config: _config, quantConfig: _quant, codeConfigs: _code, ...summary } = info;
  return summary;
}
