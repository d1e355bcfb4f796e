import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { fileSchema } from "../config/file-schema.ts";
import { ENGINE_KINDS, ENGINE_NAMES, type EngineKind } from "../engine/engine-kind.ts";
import { engineFor } from "../engine/engines.ts";
import { asCodedError } from "../errors.ts";
import { parseModelRef } from "../grammar/model-ref.ts";
import { HubClient } from "../hub/hub-client.ts";
import type { ModelInfo } from "../hub/types.ts";
import { catalogueRecipes, shippedCatalogue } from "../plan/catalogue.ts";
import type { CatalogueRecipe, CompatibilityRow } from "../plan/catalogue-schema.ts";
import { type ComputeCapability, quantizationCheck, smLabel } from "../plan/compatibility.ts";
import { modelFacts } from "../plan/model-facts.ts";
import { explainMatch, isModelRecipe, recipeSettings } from "../plan/recipes.ts";

/*
 * `modelswap recipes [model]`: the recipe catalogue, and which recipes a model gets and why. The model is
 * a Hub reference (read through HF_ENDPOINT, with HF_TOKEN for gated ones) or a local directory holding
 * its config.json (and hf_quant_config.json). Nothing is started; no host is asked.
 */

export interface RecipesOptions {
  model?: string;
  /** Compute capabilities to explain for ("12.0", "sm_120"); default: the bench's GPU kinds. */
  gpus: string[];
  engines: EngineKind[];
  /** A config file whose recipes.own are added after the shipped ones. */
  configPath?: string;
  env: NodeJS.ProcessEnv;
  out: NodeJS.WritableStream;
  err: NodeJS.WritableStream;
}

const DEFAULT_GPUS: Array<[ComputeCapability, string]> = [
  [{ major: 8, minor: 0 }, "A100"],
  [{ major: 9, minor: 0 }, "H100/H200"],
  [{ major: 10, minor: 0 }, "B200/B300"],
  [{ major: 12, minor: 0 }, "RTX PRO 6000 Blackwell"],
];

/** "12.0", "12", "sm_120", "sm120" → 12.0; undefined when it is none of these. */
export function parseGpu(text: string): ComputeCapability | undefined {
  const sm = /^sm_?(\d{1,2})(\d)$/.exec(text);
  if (sm !== null) return { major: Number(sm[1]), minor: Number(sm[2]) };
  const cc = /^(\d{1,2})(?:\.(\d))?$/.exec(text);
  if (cc !== null) return { major: Number(cc[1]), minor: Number(cc[2] ?? 0) };
  return undefined;
}

export async function recipesCommand(options: RecipesOptions): Promise<number> {
  const { out, err } = options;
  const gpus: Array<[ComputeCapability, string]> = [];
  for (const g of options.gpus) {
    const cc = parseGpu(g);
    if (cc === undefined) {
      err.write(`modelswap recipes: --gpu takes a compute capability like 12.0 or sm_120, not '${g}'\n`);
      return 2;
    }
    gpus.push([cc, smLabel(cc)]);
  }
  let own: CatalogueRecipe[] = [];
  let ownRows: CompatibilityRow[] = [];
  const configPath = options.configPath ?? options.env.MODELSWAP_CONFIG;
  if (configPath !== undefined && (options.configPath !== undefined || existsSync(configPath))) {
    const parsed = fileSchema.safeParse(parse(readFileSync(configPath, "utf8")));
    if (!parsed.success) {
      err.write(
        `modelswap recipes: ${configPath} is not a valid config (modelswap config check ${configPath} lists why)\n`,
      );
      return 1;
    }
    own = parsed.data.recipes.own;
    ownRows = parsed.data.recipes.compatibility;
  }
  const recipes = catalogueRecipes(own);
  if (options.model === undefined) {
    listCatalogue(recipes, own.length, out);
    return 0;
  }
  let info: ModelInfo;
  try {
    info = await readModel(options.model, options.env);
  } catch (error) {
    const coded = asCodedError(error);
    err.write(
      `modelswap recipes: ${coded.message} (${coded.code})${coded.fix ? `\nfix: ${coded.fix}` : ""}\n`,
    );
    return 1;
  }
  const facts = modelFacts(info);
  out.write(`${info.repo}: ${facts.architecture}`);
  const types = [facts.modelType, facts.textModelType].filter((t) => t !== undefined).join(" / ");
  out.write(
    `${types === "" ? "" : ` (model_type ${types})`}${facts.experts === undefined ? ", dense" : `, MoE of ${facts.experts} experts`}\n`,
  );
  out.write(
    `  weights: ${facts.quant?.description ?? facts.quantization} (read from ${facts.quant?.source ?? "config.json"}), ${(facts.weightBytes / 1e9).toFixed(1)} GB\n`,
  );
  for (const kind of options.engines) {
    for (const [cc, label] of gpus.length > 0 ? gpus : DEFAULT_GPUS) {
      out.write(`\n${ENGINE_NAMES[kind]} on ${label} (${smLabel(cc)}):\n`);
      const quant = quantizationCheck({
        facts,
        cc,
        gpuName: label,
        engine: kind,
        hostEngines: ENGINE_KINDS,
        table: [...ownRows, ...shippedCatalogue().compatibility],
      });
      out.write(`  ${quant.ok ? "✓" : "✗"} ${quant.detail}\n`);
      if (!quant.ok) {
        if (quant.fix !== undefined) out.write(`    fix: ${quant.fix}\n`);
        continue;
      }
      const subject = { repo: info.repo, facts, cc, engine: kind };
      const applied: CatalogueRecipe[] = [];
      for (const recipe of recipes) {
        const why = explainMatch(recipe, subject);
        const failed = why.find((c) => !c.ok);
        if (failed === undefined) {
          applied.push(recipe);
          out.write(
            `  ✓ ${recipe.id} (${recipe.title}): ${why.map((c) => c.what).join("; ") || "matches every model"}\n`,
          );
        } else if (isModelRecipe(recipe) || why.filter((c) => c.ok).length > 0) {
          out.write(`  · ${recipe.id}: not this model: ${failed.what} is false\n`);
        }
      }
      if (!applied.some(isModelRecipe))
        out.write("  → no known-good recipe names this model: engine defaults; the sanity gate decides\n");
      const engine = engineFor(kind);
      const result = recipeSettings(applied, engine, {
        facts,
        cc,
        tp: 1,
        kvCacheBytes: 0,
        hostMemoryBytes: 0,
      });
      for (const s of result.settings) {
        const flag = engine.spellingsOf(s.setting)[0]!.flag;
        out.write(`    ${flag}${s.value === undefined ? "" : ` ${s.value}`}  (${s.from}): ${s.reason}\n`);
      }
      for (const e of result.env) out.write(`    ${e.name}=${e.value}  (${e.from}): ${e.reason}\n`);
      for (const note of result.notes) out.write(`    note: ${note}\n`);
    }
  }
  return 0;
}

function listCatalogue(recipes: readonly CatalogueRecipe[], own: number, out: NodeJS.WritableStream): void {
  out.write(
    `${recipes.length} recipes (${recipes.length - own} shipped in src/plan/catalogue.yaml${own > 0 ? `, ${own} of recipes.own` : ""}), applied in this order:\n`,
  );
  for (const r of recipes) {
    const m = r.match;
    const when = Object.entries(m)
      .map(([k, v]) => `${k} ${Array.isArray(v) ? v.join(",") : String(v)}`)
      .join("; ");
    const sets = [
      ...r.flags.map(
        (f) =>
          `--${f.setting}${
            f.value === true
              ? ""
              : ` ${
                  typeof f.value === "string"
                    ? f.value
                    : Object.entries(f.value)
                        .map(([e, v]) => `${v} (${e})`)
                        .join(" / ")
                }`
          }`,
      ),
      ...r.env.map((e) => `${e.name}=${e.value}`),
      ...(r.hierarchicalCache === true ? ["hierarchical KV cache"] : []),
    ];
    out.write(
      `  ${r.id}: ${r.title}\n    when: ${when || "always"}\n    sets: ${sets.join(", ") || "nothing (notes only)"}\n`,
    );
  }
  out.write("\nwhere each weight format runs (compatibility table):\n");
  for (const row of shippedCatalogue().compatibility) {
    out.write(
      `  ${row.format}${row.methods === undefined ? "" : ` (${row.methods.join(", ")})`} · ${ENGINE_NAMES[row.engine]} · ${row.cc.join(", ")}: ${row.how}\n`,
    );
  }
}

/** A Hub model through the Hub's API, or a local directory with config.json (and hf_quant_config.json). */
async function readModel(model: string, env: NodeJS.ProcessEnv): Promise<ModelInfo> {
  if (existsSync(model) && statSync(model).isDirectory()) return readLocal(model);
  const ref = parseModelRef(model);
  if (ref === undefined)
    throw new Error(
      `${model} is neither a directory with a config.json nor a Hugging Face model reference (org/name, https://huggingface.co/org/name)`,
    );
  const hub = new HubClient({
    endpoint: env.HF_ENDPOINT ?? "https://huggingface.co",
    ...(env.HF_TOKEN === undefined || env.HF_TOKEN === "" ? {} : { token: env.HF_TOKEN }),
  });
  return await hub.resolve(ref);
}

function readJson(path: string): Record<string, unknown> | undefined {
  return existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>) : undefined;
}

/**
 * A checkpoint's directory: config.json, hf_quant_config.json when there, and the weights' size from
 * model.safetensors.index.json's metadata.total_size, else the *.safetensors files' sizes.
 */
export function readLocal(dir: string): ModelInfo {
  const config = readJson(join(dir, "config.json"));
  if (config === undefined) throw new Error(`${dir} has no config.json`);
  const hfQuant = readJson(join(dir, "hf_quant_config.json"));
  const index = readJson(join(dir, "model.safetensors.index.json"));
  const metadata = index?.metadata as { total_size?: unknown } | undefined;
  const shards = readdirSync(dir).filter((f) => f.endsWith(".safetensors"));
  const weightBytes =
    typeof metadata?.total_size === "number"
      ? metadata.total_size
      : shards.reduce((sum, f) => sum + statSync(join(dir, f)).size, 0);
  // a directory named as the Hub caches it, org--name, stands for that repo (recipes match repo names)
  const base = dir.split("/").filter(Boolean).at(-1) ?? "model";
  const repo = base.includes("--") ? base.replace("--", "/") : `local/${base}`;
  const quant = config.quantization_config;
  return {
    repo,
    revision: "main",
    sha: "0".repeat(40),
    files: [],
    totalBytes: weightBytes,
    weightBytes,
    gated: false,
    config,
    quantConfig:
      hfQuant ??
      (typeof quant === "object" && quant !== null ? (quant as Record<string, unknown>) : undefined),
    codeConfigs: {},
  };
}
