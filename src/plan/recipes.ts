import type { EngineKind } from "../engine/engine-kind.ts";
import type { EnvSetting, RecipeSetting } from "../engine/engine-setup.ts";
import { globMatches } from "../engine/engine-source.ts";
import { formatGiB, GiB } from "./byte-units.ts";
import type { CatalogueRecipe } from "./catalogue-schema.ts";
import { type ComputeCapability, ccIn } from "./compatibility.ts";
import type { ModelFacts } from "./types.ts";

/*
 * Recipes are data (src/plan/catalogue.yaml, and the operator's own: recipes.own in the config): this
 * module matches them against a model, GPUs and an engine, and turns the ones that apply into the unit's
 * settings, environment and notes, each with its reason, its source and where it came from. The settings
 * are named by meaning ("fp4-gemm-backend"); the engine build's `--help` decides how they are spelled
 * (flag-spellings.ts). No recipe sets trust-remote-code (the schema refuses it): whether the model repo's
 * Python runs is decided from its files (remote-code.ts), in make-plan.ts.
 */

export type { EnvSetting, RecipeSetting } from "../engine/engine-setup.ts";
export type { ComputeCapability } from "./compatibility.ts";

export interface RecipeResult {
  settings: RecipeSetting[];
  /** Things the plan should say that are not flags ("hierarchical cache off: …"). */
  notes: string[];
  env?: EnvSetting[];
}

/** What a recipe's computed parts need beyond the model: the hardware and the memory estimate at the chosen tp. */
export interface RecipeContext {
  facts: ModelFacts;
  cc: ComputeCapability;
  tp: number;
  /** The engine's GPU KV cache over all tp GPUs (choose-tp.ts estimate). */
  kvCacheBytes: number;
  hostMemoryBytes: number;
}

/** What a recipe is matched against. */
export interface RecipeSubject {
  repo: string;
  facts: ModelFacts;
  cc: ComputeCapability;
  engine: EngineKind;
}

/** Whether a recipe names a model (architectures, model types, repos), not only a format or GPU. */
export function isModelRecipe(recipe: CatalogueRecipe): boolean {
  const m = recipe.match;
  return m.architectures !== undefined || m.modelTypes !== undefined || m.repos !== undefined;
}

const anyGlob = (globs: readonly string[], text: string): boolean =>
  globs.some((g) => globMatches(g.toLowerCase(), text.toLowerCase()));

/**
 * Each criterion of a recipe's match with whether the subject meets it, in words: the explanation
 * `modelswap recipes` prints, and the test of `matches`.
 */
export function explainMatch(
  recipe: CatalogueRecipe,
  subject: RecipeSubject,
): Array<{ ok: boolean; what: string }> {
  const m = recipe.match;
  const { facts, cc, engine, repo } = subject;
  const out: Array<{ ok: boolean; what: string }> = [];
  const check = (ok: boolean, what: string) => out.push({ ok, what });
  const list = (xs: readonly (string | number)[]) => xs.join(", ");
  if (m.architectures !== undefined)
    check(
      anyGlob(m.architectures, facts.architecture),
      `architecture ${facts.architecture} in ${list(m.architectures)}`,
    );
  if (m.modelTypes !== undefined) {
    const types = [facts.modelType, facts.textModelType].filter((t): t is string => t !== undefined);
    check(
      types.some((t) => m.modelTypes!.includes(t)),
      `model_type ${types.length === 0 ? "(none)" : types.join(" / ")} in ${list(m.modelTypes)}`,
    );
  }
  if (m.repos !== undefined) check(anyGlob(m.repos, repo), `repo ${repo} matches ${list(m.repos)}`);
  if (m.notRepos !== undefined)
    check(!anyGlob(m.notRepos, repo), `repo ${repo} does not match ${list(m.notRepos)}`);
  if (m.formats !== undefined)
    check(m.formats.includes(facts.quantization), `format ${facts.quantization} in ${list(m.formats)}`);
  const q = facts.quant;
  if (m.methods !== undefined)
    check(
      q !== undefined && m.methods.includes(q.method),
      `quantization method ${q?.method ?? "(unread)"} in ${list(m.methods)}`,
    );
  if (m.weightBits !== undefined)
    check(
      q?.weightBits !== undefined && m.weightBits.includes(q.weightBits),
      `${q?.weightBits ?? "?"}-bit weights in ${list(m.weightBits)}`,
    );
  if (m.schemes !== undefined)
    check(
      q?.scheme !== undefined && m.schemes.includes(q.scheme),
      `scheme ${q?.scheme ?? "(none)"} in ${list(m.schemes)}`,
    );
  if (m.cc !== undefined)
    check(
      m.cc.some((r) => ccIn(r, cc)),
      `compute capability ${cc.major}.${cc.minor} in ${list(m.cc)}`,
    );
  if (m.engines !== undefined) check(m.engines.includes(engine), `engine ${engine} in ${list(m.engines)}`);
  if (m.moe !== undefined)
    check((facts.experts !== undefined) === m.moe, m.moe ? "a mixture-of-experts model" : "a dense model");
  return out;
}

export function matches(recipe: CatalogueRecipe, subject: RecipeSubject): boolean {
  return explainMatch(recipe, subject).every((c) => c.ok);
}

/** The recipes that apply, in catalogue order (shipped, then the operator's own). */
export function matchingRecipes(
  recipes: readonly CatalogueRecipe[],
  subject: RecipeSubject,
): CatalogueRecipe[] {
  return recipes.filter((r) => matches(r, subject));
}

const forEngine = (engines: readonly EngineKind[] | undefined, engine: EngineKind) =>
  engines === undefined || engines.includes(engine);

/**
 * Sets one setting in a list: added, or replacing an earlier one of the same name, whose value and origin
 * the new reason then names.
 */
export function withSetting(settings: readonly RecipeSetting[], next: RecipeSetting): RecipeSetting[] {
  const before = settings.find((s) => s.setting === next.setting);
  if (before === undefined) return [...settings, next];
  const had = `; replaces ${before.from ?? "the plan"}'s ${before.value ?? "(on)"}`;
  return settings.map((s) => (s === before ? { ...next, reason: `${next.reason}${had}` } : s));
}

/**
 * The settings, environment and notes of the recipes that apply, for one engine: a flag whose `engines`
 * leave this engine out, or whose per-engine value names none for it, is not set; a later recipe's
 * setting replaces an earlier one's. `hierarchicalCache` is SGLang's host-RAM KV cache, computed here.
 */
export function recipeSettings(
  recipes: readonly CatalogueRecipe[],
  engine: { kind: EngineKind; name: string; hierarchicalCache: boolean },
  ctx: RecipeContext,
): Required<RecipeResult> {
  let settings: RecipeSetting[] = [];
  const env: EnvSetting[] = [];
  const notes: string[] = [];
  for (const recipe of recipes) {
    const from = `recipe ${recipe.id}`;
    for (const flag of recipe.flags) {
      if (!forEngine(flag.engines, engine.kind)) continue;
      const value =
        flag.value === true
          ? undefined
          : typeof flag.value === "string"
            ? flag.value
            : flag.value[engine.kind];
      if (typeof flag.value === "object" && value === undefined) continue;
      settings = withSetting(settings, {
        setting: flag.setting,
        value,
        reason: flag.reason,
        source: flag.source,
        from,
      });
    }
    for (const e of recipe.env) {
      if (!forEngine(e.engines, engine.kind)) continue;
      const at = env.findIndex((x) => x.name === e.name);
      const next = { name: e.name, value: e.value, reason: e.reason, source: e.source, from };
      if (at < 0) env.push(next);
      else env[at] = next;
    }
    for (const note of recipe.notes) if (forEngine(note.engines, engine.kind)) notes.push(note.text);
    if (recipe.hierarchicalCache === true) {
      if (!engine.hierarchicalCache) {
        notes.push(`Hierarchical KV cache (recipe ${recipe.id}): ${engine.name} has none; off.`);
        continue;
      }
      const cache = hierarchicalCache(ctx);
      for (const s of cache.settings) settings = withSetting(settings, { ...s, from });
      notes.push(...cache.notes);
    }
  }
  return { settings, env, notes };
}

/** Host cache size as a multiple of the GPU KV cache (`--hicache-ratio`). */
export const HICACHE_RATIO = 4;
/** RAM left to the OS, the engine's processes and the page cache when the host cache is on. */
export const HICACHE_HEADROOM_BYTES = 64 * GiB;

/**
 * Hierarchical KV cache: prefixes evicted from the GPUs stay in host RAM. SGLang pins
 * `hicache-ratio × the GPU KV pool` of RAM per rank at start and refuses to start without it, so it is
 * only turned on when RAM holds that much plus headroom.
 */
export function hierarchicalCache(ctx: RecipeContext): RecipeResult {
  const hostCache = HICACHE_RATIO * ctx.kvCacheBytes;
  const needed = hostCache + HICACHE_HEADROOM_BYTES;
  const sizes = `${HICACHE_RATIO} × the ${formatGiB(ctx.kvCacheBytes)} GPU KV cache = ${formatGiB(hostCache)}, plus ${formatGiB(HICACHE_HEADROOM_BYTES)} headroom`;
  if (ctx.kvCacheBytes <= 0 || ctx.hostMemoryBytes < needed) {
    return {
      settings: [],
      notes: [
        `Hierarchical KV cache off: host RAM ${formatGiB(ctx.hostMemoryBytes)} is less than the ${formatGiB(needed)} it needs (${sizes}).`,
      ],
    };
  }
  const source = "https://docs.sglang.ai/advanced_features/hicache.html";
  return {
    settings: [
      {
        setting: "enable-hierarchical-cache",
        value: undefined,
        reason: `host RAM ${formatGiB(ctx.hostMemoryBytes)} holds ${sizes}: prefixes evicted from the GPUs stay in RAM instead of being recomputed`,
        source,
      },
      {
        setting: "hicache-ratio",
        value: String(HICACHE_RATIO),
        reason: `host cache ${HICACHE_RATIO}× the GPU KV cache (${formatGiB(hostCache)})`,
        source,
      },
    ],
    notes: [],
  };
}
