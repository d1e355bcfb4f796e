/** Shapes shared by the simulated Hugging Face Hub and its callers (tests, demo). */

/** One file of a simulated model repository. */
export interface SimModelFile {
  /** Path in the repository, `/`-separated (e.g. `config.json`, `original/params.json`). */
  path: string;
  /** Size in bytes. Taken from `content` when `content` is given. */
  size: number;
  /** Stored in Git LFS. Default: size > 10 MiB, or a weight-like extension (`*.safetensors`, `*.bin`, …). */
  lfs?: boolean;
  /** Real content for small files (config.json, tokenizer files). Without it, content is generated. */
  content?: string | Buffer;
}

export type GatedMode = false | "auto" | "manual";

/** A model repository served by the simulated Hub. */
export interface SimModel {
  /** `org/name`. */
  id: string;
  /** Branches and tags → commit sha (40 hex). Default: `{ main: sha }`. */
  revisions?: Record<string, string>;
  /** Commit sha of `main` when `revisions` has no `main`. Default: derived from the id. */
  sha?: string;
  files: SimModelFile[];
  /** Gated repos: metadata and tree stay public, file downloads need a valid token. */
  gated?: GatedMode;
  /** For gated repos: the tokens granted access. Default: every valid token is granted. Others get 403. */
  approvedTokens?: string[];
  license?: string;
  /** Private repos look missing (401/404 RepoNotFound) to callers without a valid token. */
  private?: boolean;
  tags?: string[];
  pipelineTag?: string;
  library?: string;
  /** Model card metadata (`cardData` in the API). `license` is added from `license` when absent. */
  cardData?: Record<string, unknown>;
  /** `safetensors.parameters` in the API, e.g. `{ BF16: 1_235_814_400 }`. */
  safetensorsParameters?: Record<string, number>;
  downloads?: number;
  likes?: number;
  /** ISO timestamp for `lastModified`. */
  lastModified?: string;
  /** Sum of all file sizes (informational; `makeModel` fills it in). */
  totalBytes?: number;
}

/** Faults switched on with `SimHub.setFault`. */
export type HubFault =
  /** File bodies (GET /resolve) are cut (socket destroyed) after `bytes` body bytes; for the next `times` responses (default: all). */
  | { kind: "drop-after-bytes"; bytes: number; times?: number }
  /** The next `times` requests (default 1) answer `status` with the Hub's error body. `on` limits it to API or file requests. */
  | { kind: "status"; status: 500 | 502 | 503 | 504 | 429; times?: number; on?: "api" | "resolve" | "all" }
  /** File bodies are sent at this rate (all connections together), overriding the throttle. */
  | { kind: "slow"; bytesPerSecond: number }
  /** Every request's connection is closed before any response (a broken network path). */
  | { kind: "reset" };

/** One request as the simulated Hub saw it. `bytesSent` counts body bytes written so far. */
export interface HubRequest {
  method: string;
  /** Decoded path without the query string, e.g. `/org/name/resolve/<sha>/model-00001-of-00003.safetensors`. */
  path: string;
  /** Raw query string without `?` ("" when none). */
  query: string;
  /** The `Range` request header, when sent. */
  range?: string;
  status: number;
  /** Body bytes written to the socket (files: the bytes actually served; cut responses count what was sent). */
  bytesSent: number;
  /** What was asked for: `api` (/api/…), `resolve` (file HEAD/GET) or `other`. */
  kind: "api" | "resolve" | "other";
  /** For resolve requests: the repo id and file path. */
  repo?: string;
  file?: string;
  /** A token was sent (`Authorization: Bearer …`); `tokenValid` says whether the Hub knew it. */
  token?: string;
  tokenValid?: boolean;
  /** True when the connection was cut by a fault or by the client before the body was complete. */
  aborted: boolean;
  startedAt: number;
  endedAt?: number;
}
