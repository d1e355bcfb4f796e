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
