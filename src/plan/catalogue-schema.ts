import { z } from "zod";
import { ENGINE_KINDS } from "../engine/engine-kind.ts";
import { problem } from "../problem-text.ts";
import { QUANTIZATIONS } from "./types.ts";

/*
 * The recipe catalogue's shape (src/plan/catalogue.yaml, and recipes.own in the config): one recipe model
 * for both engines. What a recipe may not set is the plan's own (reservedSettings) or decided elsewhere
 * (trust-remote-code: src/plan/remote-code.ts).
 */

/** Settings only the planner sets: where the unit listens, what it serves, how many GPUs. */
export const PLAN_SETTINGS = ["model-path", "host", "port", "tp-size"] as const;
/** The flag that lets the model repo's Python run: decided from the repo's files alone (remote-code.ts). */
export const REMOTE_CODE_SETTING = "trust-remote-code";

/** Names that would make a unit listen elsewhere or run code, whoever sets them (docs/security.md). */
export function reservedSetting(setting: string): string | undefined {
  if ((PLAN_SETTINGS as readonly string[]).includes(setting))
    return `${setting} is the plan's own (model-path, host, port and tp-size follow the host's config and --tp)`;
  if (setting === REMOTE_CODE_SETTING)
    return "trust-remote-code is decided from the model repo's files and allowed per org (hub.remoteCodeOrgs), never set";
  if (setting === "api-key" || setting === "admin-api-key")
    return `${setting} is a secret: it would be written into the unit file and the plan, and modelswap's own health, sanity and benchmark requests do not send it`;
  if (/(^|-)(host|port|address|addr|url|socket)$/.test(setting) || setting.startsWith("dist-init"))
    return `${setting} would make the engine listen or connect elsewhere: the unit listens on loopback only`;
  return undefined;
}

/** An engine setting by its name: the flag without the dashes ("fp4-gemm-backend"). */
export const settingNameSchema = z
  .string()
  .regex(
    /^[a-z][a-z0-9-]{1,60}$/,
    problem("a setting is named like its flag without the dashes", "use e.g. fp4-gemm-backend"),
  )
  .superRefine((s, ctx) => {
    const why = reservedSetting(s);
    if (why !== undefined)
      ctx.addIssue({
        code: "custom",
        message: problem(
          why,
          s === REMOTE_CODE_SETTING
            ? "remove it; to let an org's models run their own code, add the org to hub.remoteCodeOrgs"
            : "remove it; use --tp on /llm swap for tp",
        ),
      });
  });

/** A flag's value as the unit passes it: one word, no shell or systemd specials. */
export const flagValueSchema = z
  .string()
  .regex(
    /^[A-Za-z0-9_.,:=+/-]{1,100}$/,
    problem("a flag's value is one plain word", "use e.g. flashinfer_cutlass"),
  );

const engines = z.array(z.enum(ENGINE_KINDS)).min(1).optional();
const reason = z.string().min(3).max(400);
/** Where the knowledge comes from: a doc, a PR or an issue URL, a source file, or "served by hand on …". */
const source = z.string().min(3).max(500);

/** A compute-capability range: "12.x", ">=8.9", "8.0-8.8", "9.0". */
export const CC_RANGE = /^(>=)?\d{1,2}\.(\d|x)$|^\d{1,2}\.\d-\d{1,2}\.(\d|x)$/;
const ccRange = z
  .string()
  .regex(CC_RANGE, problem("not a compute-capability range", 'use e.g. "12.x", ">=8.9" or "8.0-8.8"'));

const globList = z.array(z.string().regex(/^[A-Za-z0-9_.*/?-]{1,120}$/)).min(1);

export const recipeFlagSchema = z.strictObject({
  setting: settingNameSchema,
  /** true (the default): a flag without a value; a map: each engine's value, none for an engine it leaves out. */
  value: z
    .union([
      flagValueSchema,
      z.literal(true),
      z.strictObject({ sglang: flagValueSchema.optional(), vllm: flagValueSchema.optional() }),
    ])
    .default(true),
  engines,
  reason,
  source,
});
export type RecipeFlag = z.infer<typeof recipeFlagSchema>;

export const recipeEnvSchema = z.strictObject({
  name: z
    .string()
    .regex(
      /^[A-Z_][A-Z0-9_]{0,80}$/,
      problem("not an environment variable name", "use e.g. VLLM_USE_FLASHINFER_MOE_FP4"),
    ),
  value: flagValueSchema,
  engines,
  reason,
  source,
});

export const recipeNoteSchema = z.strictObject({ text: z.string().min(3).max(400), engines, source });

export const recipeMatchSchema = z.strictObject({
  /** config.json architectures[0] (globs). */
  architectures: globList.optional(),
  /** config.json model_type, or text_config's (exact). */
  modelTypes: z
    .array(z.string().regex(/^[a-z0-9_.-]{1,60}$/))
    .min(1)
    .optional(),
  /** The Hub repo, org/name (globs, case-insensitive). */
  repos: globList.optional(),
  notRepos: globList.optional(),
  /** The weights' format and the quantization method and its parameters (src/plan/quant-facts.ts). */
  formats: z.array(z.enum(QUANTIZATIONS)).min(1).optional(),
  methods: z
    .array(z.string().regex(/^[a-z0-9_-]{1,40}$/))
    .min(1)
    .optional(),
  weightBits: z.array(z.number().int().min(1).max(32)).min(1).optional(),
  schemes: z
    .array(z.enum(["block", "channel", "tensor", "group"]))
    .min(1)
    .optional(),
  /** Compute capabilities of the host's GPUs (the oldest decides). */
  cc: z.array(ccRange).min(1).optional(),
  engines,
  /** Mixture-of-experts models only (true) or dense only (false). */
  moe: z.boolean().optional(),
});
export type RecipeMatch = z.infer<typeof recipeMatchSchema>;

export const recipeSchema = z.strictObject({
  id: z
    .string()
    .regex(
      /^[a-z0-9][a-z0-9.+-]{0,60}$/,
      problem("a recipe id is lowercase letters, digits and . + -", "use e.g. qwen3.5"),
    ),
  title: z.string().min(3).max(120),
  match: recipeMatchSchema,
  flags: z.array(recipeFlagSchema).default([]),
  env: z.array(recipeEnvSchema).default([]),
  notes: z.array(recipeNoteSchema).default([]),
  /** SGLang's host-RAM KV cache when the host has the RAM for it (src/plan/recipes.ts hierarchicalCache). */
  hierarchicalCache: z.boolean().optional(),
});
export type CatalogueRecipe = z.infer<typeof recipeSchema>;

export const compatibilityRowSchema = z.strictObject({
  format: z.enum(QUANTIZATIONS),
  engine: z.enum(ENGINE_KINDS),
  methods: z.array(z.string()).min(1).optional(),
  /** Only mixture-of-experts models (true) or only dense ones (false); absent: both. */
  moe: z.boolean().optional(),
  cc: z.array(ccRange).min(1),
  /** How the engine runs it there, for the plan ("weight-only FP8 through Marlin"). */
  how: z.string().min(3),
  source,
});
export type CompatibilityRow = z.infer<typeof compatibilityRowSchema>;

export const catalogueSchema = z.strictObject({
  compatibility: z.array(compatibilityRowSchema).min(1),
  recipes: z.array(recipeSchema).superRefine((recipes, ctx) => {
    const seen = new Set<string>();
    recipes.forEach((r, i) => {
      if (seen.has(r.id))
        ctx.addIssue({ code: "custom", path: [i, "id"], message: `recipe id ${r.id} is used twice` });
      seen.add(r.id);
    });
  }),
});
export type Catalogue = z.infer<typeof catalogueSchema>;
