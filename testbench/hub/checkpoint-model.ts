import { readFileSync } from "node:fs";
import { join } from "node:path";
import { GITATTRIBUTES, json, shardName, shardSizes, tinyTokenizerJson } from "./model-files.ts";
import { defaultSha } from "./sim-hub.ts";
import type { SimModel, SimModelFile } from "./types.ts";

/**
 * A repository for the simulated Hub made from a checkpoint directory holding a real model's config.json
 * (and hf_quant_config.json) and a model.safetensors.index.json whose metadata.total_size is its weights'
 * bytes (test/fixtures/model-configs/: `org--name`, the Hub cache's name). Its weights are `shards`
 * safetensors files of 1/`scale` of the real size each (the bot learns the scale from bench.weightScale),
 * beside a tiny tokenizer; its configs are the real ones, byte for byte.
 */
export function checkpointModel(dir: string, opts: { scale: number; shards?: number }): SimModel {
  const base = dir.split("/").filter(Boolean).at(-1)!;
  const id = base.replace("--", "/");
  const read = (name: string): string | undefined => {
    try {
      return readFileSync(join(dir, name), "utf8");
    } catch {
      return undefined;
    }
  };
  const config = read("config.json");
  if (config === undefined) throw new Error(`${dir} has no config.json`);
  const index = JSON.parse(read("model.safetensors.index.json") ?? "{}") as {
    metadata?: { total_size?: number };
  };
  const total = index.metadata?.total_size;
  if (typeof total !== "number")
    throw new Error(`${dir}: model.safetensors.index.json has no metadata.total_size`);
  const shards = opts.shards ?? 4;
  const sizes = shardSizes(total, shards).map((s) => Math.max(1, Math.round(s / opts.scale)));
  const names = sizes.map((_, i) => shardName(i, shards, 5));
  const hfQuant = read("hf_quant_config.json");
  const files: SimModelFile[] = [
    { path: ".gitattributes", size: 0, content: GITATTRIBUTES },
    {
      path: "README.md",
      size: 0,
      content: `---\nlibrary_name: transformers\n---\n# ${id}\n(simulated copy)\n`,
    },
    { path: "config.json", size: 0, content: config },
    ...(hfQuant === undefined ? [] : [{ path: "hf_quant_config.json", size: 0, content: hfQuant }]),
    { path: "tokenizer_config.json", size: 0, content: json({ model_max_length: 131072 }) },
    { path: "tokenizer.json", size: 0, content: tinyTokenizerJson(["<|endoftext|>"]) },
    ...names.map((path, i) => ({ path, size: sizes[i]!, lfs: true })),
    {
      path: "model.safetensors.index.json",
      size: 0,
      content: json({ metadata: { total_size: sizes.reduce((a, b) => a + b, 0) }, weight_map: {} }),
    },
  ];
  for (const f of files) if (f.content !== undefined) f.size = Buffer.byteLength(f.content);
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return {
    id,
    files,
    license: "other",
    tags: ["transformers", "safetensors"],
    pipelineTag: "text-generation",
    library: "transformers",
    sha: defaultSha(id),
    totalBytes: files.reduce((sum, f) => sum + f.size, 0),
  };
}
