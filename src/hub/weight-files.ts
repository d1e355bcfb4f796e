import type { ModelFile } from "./types.ts";

/** Extensions of weight files in formats other than safetensors, named in "no safetensors" errors. */
const OTHER_WEIGHT_FORMATS = [
  ".bin",
  ".pt",
  ".pth",
  ".ckpt",
  ".gguf",
  ".ggml",
  ".onnx",
  ".h5",
  ".msgpack",
  ".npz",
  ".pkl",
  ".tflite",
  ".mlmodel",
];

/**
 * Extensions of files no engine reads from a model's directory, and that can be many or large: pictures,
 * media and PDFs (a model card's figures, a paper). Left on the Hub; text documents (the model card,
 * licenses) are small and downloaded.
 */
const NOT_SERVED = [
  ".png",
  ".jpg",
  ".jpeg",
  ".gif",
  ".webp",
  ".svg",
  ".bmp",
  ".ico",
  ".tif",
  ".tiff",
  ".mp4",
  ".mov",
  ".webm",
  ".mp3",
  ".wav",
  ".flac",
  ".pdf",
];

const isSafetensors = (path: string): boolean => path.toLowerCase().endsWith(".safetensors");

/**
 * The safetensors files the engine loads: those at the repository root (subfolders hold variants such
 * as `original/`). When a repo ships both the transformers shards and Mistral's `consolidated*.safetensors`
 * (same weights, other layout), only the transformers shards count.
 */
export function weightFiles(files: readonly ModelFile[]): ModelFile[] {
  const root = files.filter((f) => !f.path.includes("/") && isSafetensors(f.path));
  const consolidated = (f: ModelFile) => f.path.toLowerCase().startsWith("consolidated");
  const transformers = root.filter((f) => !consolidated(f));
  return transformers.length > 0 ? transformers : root;
}

/** What a swap downloads of a repository, and what it leaves on the Hub. */
export interface DownloadSet {
  /** The weight files (weightFiles) and the files beside them the engine may read, sorted by path. */
  files: ModelFile[];
  /** Everything else: subfolders (`original/`, `assets/`), other weight formats, pictures, media, PDFs. */
  left: { files: number; bytes: number };
}

/**
 * What the engine reads from a model's directory, and so what a swap downloads and verifies: the weight
 * files, and every other file at the top level (config.json, the quantization config, tokenizer files,
 * the chat template, remote code, the model card) but safetensors that are not the weights, other weight
 * formats, pictures, media and PDFs. Subfolders hold what no engine loads from the top level: variants
 * (`original/`), figures, examples. `files` must be sorted by path; so is the result.
 */
export function downloadSet(files: readonly ModelFile[]): DownloadSet {
  const weights = new Set(weightFiles(files));
  const kept: ModelFile[] = [];
  let leftFiles = 0;
  let leftBytes = 0;
  for (const f of files) {
    const lower = f.path.toLowerCase();
    const read =
      weights.has(f) ||
      (!f.path.includes("/") &&
        !isSafetensors(f.path) &&
        !OTHER_WEIGHT_FORMATS.some((e) => lower.endsWith(e)) &&
        !NOT_SERVED.some((e) => lower.endsWith(e)));
    if (read) kept.push(f);
    else {
      leftFiles += 1;
      leftBytes += f.size;
    }
  }
  return { files: kept, left: { files: leftFiles, bytes: leftBytes } };
}

/**
 * What weights a repository has instead of root-level safetensors, for an error message:
 * e.g. `only .bin (4 files) and .gguf (2 files)`.
 */
export function describeOtherWeights(files: readonly ModelFile[]): string {
  const counts = new Map<string, number>();
  for (const f of files) {
    const lower = f.path.toLowerCase();
    const ext = OTHER_WEIGHT_FORMATS.find((e) => lower.endsWith(e));
    if (ext !== undefined) counts.set(ext, (counts.get(ext) ?? 0) + 1);
  }
  const nested = files.filter((f) => f.path.includes("/") && isSafetensors(f.path));
  const parts = [...counts]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .map(([ext, n]) => `${ext} (${n} ${n === 1 ? "file" : "files"})`);
  if (nested.length > 0) {
    const folders = [...new Set(nested.map((f) => f.path.slice(0, f.path.lastIndexOf("/"))))].slice(0, 3);
    parts.push(`.safetensors only in subfolders (${folders.map((d) => `${d}/`).join(", ")})`);
  }
  if (parts.length === 0) {
    const names = files.slice(0, 5).map((f) => f.path);
    const more = files.length > names.length ? `, … (${files.length} files)` : "";
    return `no weight files at all (${names.join(", ") || "the repository is empty"}${more})`;
  }
  const list = parts.length === 1 ? parts[0]! : `${parts.slice(0, -1).join(", ")} and ${parts.at(-1)}`;
  return `only ${list}`;
}
