import { z } from "zod";
import { ENGINE_KINDS } from "../engine/engine-kind.ts";
import { ENGINE_REF_RULE, isEngineRef } from "../grammar/engine-ref.ts";
import { settingValueProblem } from "../grammar/flag-setting.ts";
import { problem } from "../problem-text.ts";
import { flagValueSchema as flagValue, settingNameSchema as settingName } from "./catalogue-schema.ts";

/**
 * An engine setting the config sets (hosts[].flags, models[].flags): a value (none for a flag without
 * one), the engines it is for (default: every engine), and why, shown in the plan.
 */
export const configFlagSchema = z
  .strictObject({
    setting: settingName,
    value: z.union([flagValue, z.literal(true)]).default(true),
    engines: z.array(z.enum(ENGINE_KINDS)).min(1).optional(),
    reason: z.string().min(3).max(300).optional(),
  })
  .superRefine((f, ctx) => {
    const bad = settingValueProblem(f.setting, f.value === true ? undefined : f.value);
    if (bad !== undefined)
      ctx.addIssue({
        code: "custom",
        path: ["value"],
        message: problem(bad, `write e.g. { setting: ${f.setting}, value: "32768" }`),
      });
  })
  .meta({ example: '{ setting: context-length, value: "32768", reason: our clients send 32k prompts }' });
export type ConfigFlag = z.infer<typeof configFlagSchema>;

/** A model's profile (models[]): its flags, tp, engine and engine ref, for every swap to it. */
export const profileSchema = z.strictObject({
  /** The Hub repo, org/name, or a glob over it (`Qwen/Qwen3-*`); the first profile that matches applies. */
  model: z
    .string(problem("models[].model is not set", "name the Hub repo, e.g. model: openai/gpt-oss-120b"))
    .regex(
      /^[A-Za-z0-9_.*?-]{1,96}\/[A-Za-z0-9_.*?-]{1,96}$/,
      problem(
        "models[].model is not org/name (globs * and ? allowed)",
        "use e.g. openai/gpt-oss-120b or Qwen/Qwen3-*",
      ),
    ),
  flags: z.array(configFlagSchema).default([]),
  tp: z.number().int().min(1).max(64).optional(),
  engine: z.enum(ENGINE_KINDS).optional(),
  engineRef: z
    .string()
    .refine(isEngineRef, problem("models[].engineRef is not a git ref", `use ${ENGINE_REF_RULE}`))
    .optional(),
  reason: z.string().min(3).max(300).optional(),
});
export type ModelProfile = z.infer<typeof profileSchema>;
