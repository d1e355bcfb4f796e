import { z } from "zod";

/*
 * One engine setting as a person types it: `--set context-length=32768` on /llm swap, or a setting in the
 * config (hosts[].flags, models[].flags). The name is the flag without its dashes, the value one plain
 * word: nothing here can carry a shell or systemd special character, and the unit quotes it anyway.
 */

/** A setting's name: lowercase letters, digits and dashes, as the flag is spelled without `--`. */
export const SETTING_NAME = /^[a-z][a-z0-9-]{1,60}$/;
/** A setting's value: one word of letters, digits and _ . , : = + / - (no spaces, quotes, $ or `). */
export const SETTING_VALUE = /^[A-Za-z0-9_.,:=+/-]{1,100}$/;

export const SETTING_RULE =
  "name=value, the flag's name without its dashes and one plain word (letters, digits, _ . , : = + / -), e.g. context-length=32768; a name alone for a flag without a value";

/** Names some engines spell differently for the same setting: the one modelswap uses. */
const ALIASES: Readonly<Record<string, string>> = {
  "max-model-len": "context-length",
  "tensor-parallel-size": "tp-size",
  tp: "tp-size",
};

/** The setting's name as the plan uses it (context-length for vLLM's max-model-len, and so on). */
export function canonicalSetting(name: string): string {
  return ALIASES[name] ?? name;
}

export const settingSetSchema = z.object({
  setting: z.string().regex(SETTING_NAME),
  /** Absent: a flag without a value. */
  value: z.string().regex(SETTING_VALUE).optional(),
});
export type SettingSet = z.infer<typeof settingSetSchema>;

/** `name=value` or `name`, as `--set` takes it; undefined when it is not one. */
export function parseSettingSet(text: string): SettingSet | undefined {
  const at = text.indexOf("=");
  const name = at < 0 ? text : text.slice(0, at);
  const value = at < 0 ? undefined : text.slice(at + 1);
  const parsed = settingSetSchema.safeParse({
    setting: canonicalSetting(name),
    ...(value === undefined ? {} : { value }),
  });
  return parsed.success && SETTING_NAME.test(name) ? parsed.data : undefined;
}

/** Settings whose value is a whole number of tokens: anything else would fail the engine's argparse at start. */
const WHOLE_NUMBER_SETTINGS = ["context-length", "max-running-requests", "max-num-seqs", "max-total-tokens"];

/** Why this value cannot be the setting's (a context length that is not a number), or undefined. */
export function settingValueProblem(setting: string, value: string | undefined): string | undefined {
  if (WHOLE_NUMBER_SETTINGS.includes(setting) && (value === undefined || !/^[1-9][0-9]{0,8}$/.test(value)))
    return `${setting} takes a whole number of tokens, e.g. ${setting}=32768`;
  return undefined;
}
