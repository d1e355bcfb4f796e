/** A model on the Hub as a swap names it: `org/name` at a revision (branch, tag or commit). */
export interface ModelRef {
  repo: string;
  /** What the user asked for; `main` when they named none. */
  revision: string;
}

export interface ModelFile {
  path: string;
  size: number;
  /** The LFS sha256 of large files (weights), when the Hub gives it. */
  sha256?: string;
}

/** What resolve learns from the Hub API, pinned to one commit. */
export interface ModelInfo {
  repo: string;
  revision: string;
  /** The commit sha the revision resolved to: every later step uses this, never the branch name. */
  sha: string;
  files: ModelFile[];
  /** Bytes of every file. */
  totalBytes: number;
  /** Bytes of the *.safetensors weight files. */
  weightBytes: number;
  gated: false | "auto" | "manual";
  license: string | undefined;
  /** The repository's config.json. */
  config: Record<string, unknown>;
  /** hf_quant_config.json when present, else config.json's quantization_config, else undefined. */
  quantConfig: Record<string, unknown> | undefined;
}
