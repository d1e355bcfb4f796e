import type { EngineKind } from "../engine/engine-kind.ts";
import { globMatches } from "../engine/engine-source.ts";
import { canonicalSetting, type SettingSet } from "../grammar/flag-setting.ts";
import { reservedSetting } from "./catalogue-schema.ts";
import type { ConfigFlag, ModelProfile } from "./profile-schema.ts";
import type { RecipeSetting } from "./recipes.ts";

/*
 * Flags from three places, one policy (issue 28 §4): after the recipes, the host's house flags
 * (hosts[].flags), then the model's profile (models[]), then the swap's own `--set` (only names
 * swaps.settable allows). A later layer's setting replaces an earlier one's, and the plan says whose it
 * was. None of them may set what the plan decides itself or what docs/security.md keeps apart
 * (reservedSetting: trust-remote-code, host, port, …): the config schema and the command refuse those,
 * and the planner drops any that reach it anyway.
 */

/** One place flags come from, in the order they apply. */
export interface FlagLayer {
  /** For the plan: "host gpu-1 (hosts[].flags)", "profile openai/gpt-oss-120b (models[])", "swap (--set)". */
  from: string;
  settings: RecipeSetting[];
}

/** The first profile whose model (a repo or a glob) names this repo, case-insensitively. */
export function profileFor(profiles: readonly ModelProfile[], repo: string): ModelProfile | undefined {
  return profiles.find((p) => globMatches(p.model.toLowerCase(), repo.toLowerCase()));
}

function fromConfig(flags: readonly ConfigFlag[], engine: EngineKind, why: string): RecipeSetting[] {
  return flags
    .filter((f) => f.engines === undefined || f.engines.includes(engine))
    .map((f) => ({
      setting: canonicalSetting(f.setting),
      value: f.value === true ? undefined : f.value,
      reason: f.reason ?? why,
    }));
}

/** The layers of flags a swap gets beyond its recipes, for the engine that serves it. */
export function flagLayers(input: {
  host: { name: string; flags?: readonly ConfigFlag[] };
  profile: ModelProfile | undefined;
  sets: readonly SettingSet[] | undefined;
  engine: EngineKind;
}): FlagLayer[] {
  const { host, profile, engine } = input;
  const layers: FlagLayer[] = [
    {
      from: `host ${host.name} (hosts[].flags)`,
      settings: fromConfig(host.flags ?? [], engine, `a house flag of ${host.name}`),
    },
  ];
  if (profile !== undefined)
    layers.push({
      from: `profile ${profile.model} (models[])`,
      settings: fromConfig(profile.flags, engine, profile.reason ?? `the profile of ${profile.model}`),
    });
  if (input.sets !== undefined && input.sets.length > 0)
    layers.push({
      from: "swap (--set)",
      settings: input.sets.map((s) => ({
        setting: canonicalSetting(s.setting),
        value: s.value,
        reason: "asked for with --set on /llm swap",
      })),
    });
  return layers
    .map((l) => ({ ...l, settings: l.settings.filter((s) => reservedSetting(s.setting) === undefined) }))
    .filter((l) => l.settings.length > 0);
}

/**
 * The engine ref a swap builds, and why: the request's (--engine-ref), else the model's profile's, else
 * the host's default (hosts[].engineRef), else upstream main.
 */
export function chooseEngineRef(
  requested: string | undefined,
  profile: ModelProfile | undefined,
  host: { name: string; engineRef?: string | undefined },
): { ref: string; why: string } {
  if (requested !== undefined) return { ref: requested, why: "asked for with --engine-ref" };
  if (profile?.engineRef !== undefined)
    return { ref: profile.engineRef, why: `the profile of ${profile.model} names it, models[].engineRef` };
  if (host.engineRef !== undefined)
    return { ref: host.engineRef, why: `${host.name}'s default, hosts[].engineRef` };
  return { ref: "main", why: "upstream main, as no request, profile or host names another" };
}
