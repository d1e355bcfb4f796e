import { z } from "zod";

/** A model on the Hub as a swap names it: `org/name` at a revision (branch, tag or commit). */
export interface ModelRef {
  repo: string;
  /** What the user asked for; `main` when they named none. */
  revision: string;
}

export const modelFileSchema = z.object({
  path: z.string(),
  size: z.number().int().nonnegative(),
  /** The LFS sha256 of large files (weights), when the Hub gives it. */
  sha256: z.string().optional(),
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
  files: z.array(modelFileSchema),
  /** Bytes of every file. */
  totalBytes: z.number().nonnegative(),
  /** Bytes of the *.safetensors weight files. */
  weightBytes: z.number().nonnegative(),
  gated: z.union([z.literal(false), z.literal("auto"), z.literal("manual")]),
  license: z.string().optional(),
});
export type ModelSummary = z.infer<typeof modelSummarySchema>;

/** What resolve learns from the Hub API, pinned to one commit: the summary and the config files. */
export interface ModelInfo extends ModelSummary {
  /** The repository's config.json. */
  config: Record<string, unknown>;
  /** hf_quant_config.json when present, else config.json's quantization_config, else undefined. */
  quantConfig: Record<string, unknown> | undefined;
}

/** The part of a resolved model that is kept. */
export function summarize(info: ModelInfo): ModelSummary {
  const { config: _config, quantConfig: _quant, ...summary } = info;
  return summary;
}
