import { createHash } from "node:crypto";
import type { FileDigests } from "./content.ts";
import type { SimModel } from "./types.ts";

/**
 * JSON bodies of the Hub API, in the shapes huggingface.co returns (see huggingface_hub's
 * `ModelInfo`, `RepoSibling`, `RepoFile`, `RepoFolder`, `GitRefs`).
 */

/** A model as the server keeps it: sizes, LFS flags and content normalised. */
export interface StoredFile {
  path: string;
  size: number;
  lfs: boolean;
  content: Buffer | undefined;
}

export interface StoredModel {
  model: SimModel;
  files: StoredFile[];
  /** Branches and tags → sha; always has `main`. */
  revisions: Record<string, string>;
}

export type DigestLookup = (file: StoredFile) => FileDigests;

/** A stable 24-hex Mongo-style id, like the Hub's `_id`. */
export function mongoId(seed: string): string {
  return createHash("sha1").update(`_id\0${seed}`).digest("hex").slice(0, 24);
}

function parseJsonFile(stored: StoredModel, path: string): Record<string, unknown> | undefined {
  const file = stored.files.find((f) => f.path === path);
  if (file?.content === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(file.content.toString("utf8"));
    return typeof parsed === "object" && parsed !== null ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The `config` summary the Hub derives from config.json and tokenizer_config.json. */
function configSummary(stored: StoredModel): Record<string, unknown> | undefined {
  const config = parseJsonFile(stored, "config.json");
  if (config === undefined) return undefined;
  const summary: Record<string, unknown> = {};
  if (config.architectures !== undefined) summary.architectures = config.architectures;
  if (config.model_type !== undefined) summary.model_type = config.model_type;
  const quant = config.quantization_config;
  if (typeof quant === "object" && quant !== null && "quant_method" in quant) {
    summary.quantization_config = { quant_method: (quant as { quant_method: unknown }).quant_method };
  }
  const tokenizer = parseJsonFile(stored, "tokenizer_config.json");
  if (tokenizer !== undefined) {
    const picked: Record<string, unknown> = {};
    for (const key of ["bos_token", "eos_token", "pad_token", "unk_token"]) {
      if (tokenizer[key] !== undefined) picked[key] = tokenizer[key];
    }
    summary.tokenizer_config = picked;
  }
  return summary;
}

export interface ModelInfoOptions {
  sha: string;
  /** `blobs=true`: siblings carry blobId, size and lfs. */
  blobs: boolean;
  /** `expand[]=…`: only these fields (plus `_id` and `id`). */
  expand: string[];
  digests: DigestLookup;
}

/** Body of `GET /api/models/{repo}[/revision/{rev}]`. */
export function modelInfoJson(stored: StoredModel, opts: ModelInfoOptions): Record<string, unknown> {
  const m = stored.model;
  const [author] = m.id.split("/");
  const cardData: Record<string, unknown> = { ...(m.cardData ?? {}) };
  if (m.license !== undefined && cardData.license === undefined) cardData.license = m.license;
  const library = m.library ?? "transformers";
  const pipelineTag = m.pipelineTag ?? "text-generation";
  const tags = m.tags ?? [
    library,
    "safetensors",
    pipelineTag,
    ...(m.license ? [`license:${m.license}`] : []),
  ];
  const siblings = stored.files.map((file) => {
    if (!opts.blobs) return { rfilename: file.path };
    const d = opts.digests(file);
    const sibling: Record<string, unknown> = { rfilename: file.path, blobId: d.gitOid, size: file.size };
    if (file.lfs) sibling.lfs = { sha256: d.sha256, size: file.size, pointerSize: d.pointerSize };
    return sibling;
  });
  const params = m.safetensorsParameters;
  const info: Record<string, unknown> = {
    _id: mongoId(m.id),
    id: m.id,
    private: m.private ?? false,
    pipeline_tag: pipelineTag,
    library_name: library,
    tags,
    downloads: m.downloads ?? 1234,
    likes: m.likes ?? 56,
    modelId: m.id,
    author,
    sha: opts.sha,
    lastModified: m.lastModified ?? "2026-01-15T12:00:00.000Z",
    gated: m.gated ?? false,
    disabled: false,
    "model-index": null,
    config: configSummary(stored),
    cardData,
    transformersInfo:
      library === "transformers"
        ? { auto_model: "AutoModelForCausalLM", pipeline_tag: pipelineTag, processor: "AutoTokenizer" }
        : undefined,
    siblings,
    spaces: [],
    createdAt: "2025-12-01T09:00:00.000Z",
    safetensors:
      params === undefined
        ? undefined
        : { parameters: params, total: Object.values(params).reduce((a, b) => a + b, 0) },
    usedStorage: stored.files.reduce((sum, f) => sum + f.size, 0),
  };
  for (const key of Object.keys(info)) if (info[key] === undefined) delete info[key];
  if (opts.expand.length === 0) return info;
  const picked: Record<string, unknown> = { _id: info._id, id: info.id };
  for (const key of opts.expand) if (key in info) picked[key] = info[key];
  return picked;
}

/** One entry of `GET /api/models/{repo}/tree/{rev}[/{path}]`. */
export type TreeEntry =
  | {
      type: "file";
      oid: string;
      size: number;
      lfs?: { oid: string; size: number; pointerSize: number };
      path: string;
    }
  | { type: "directory"; oid: string; size: 0; path: string };

function directoriesOf(files: StoredFile[]): string[] {
  const dirs = new Set<string>();
  for (const f of files) {
    const parts = f.path.split("/");
    for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join("/"));
  }
  return [...dirs];
}

function byPath(a: { path: string }, b: { path: string }): number {
  return a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
}

/**
 * The tree listing under `dir` ("" = root). Recursive listings include every file and folder below;
 * non-recursive ones only the direct children. Returns undefined when `dir` is not a folder.
 */
export function treeEntries(
  stored: StoredModel,
  dir: string,
  recursive: boolean,
  digests: DigestLookup,
): TreeEntry[] | undefined {
  const dirs = directoriesOf(stored.files);
  if (dir !== "" && !dirs.includes(dir)) return undefined;
  const prefix = dir === "" ? "" : `${dir}/`;
  const inScope = (path: string) =>
    path.startsWith(prefix) && (recursive || !path.slice(prefix.length).includes("/"));
  const entries: TreeEntry[] = [];
  for (const d of dirs) {
    if (!inScope(d)) continue;
    const oid = createHash("sha1").update(`tree\0${stored.model.id}\0${d}`).digest("hex");
    entries.push({ type: "directory", oid, size: 0, path: d });
  }
  for (const file of stored.files) {
    if (!inScope(file.path)) continue;
    const d = digests(file);
    if (file.lfs) {
      entries.push({
        type: "file",
        oid: d.gitOid,
        size: file.size,
        lfs: { oid: d.sha256, size: file.size, pointerSize: d.pointerSize ?? 0 },
        path: file.path,
      });
    } else {
      entries.push({ type: "file", oid: d.gitOid, size: file.size, path: file.path });
    }
  }
  return entries.sort(byPath);
}

/** Body of `GET /api/models/{repo}/refs`. */
export function refsJson(stored: StoredModel): Record<string, unknown> {
  const branches: unknown[] = [];
  const tags: unknown[] = [];
  for (const [name, sha] of Object.entries(stored.revisions)) {
    // Convention of the simulator: names starting with "v" and a digit are tags, the rest branches.
    if (/^v\d/.test(name)) tags.push({ name, ref: `refs/tags/${name}`, targetCommit: sha });
    else branches.push({ name, ref: `refs/heads/${name}`, targetCommit: sha });
  }
  return { branches, converts: [], tags };
}
