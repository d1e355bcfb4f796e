import type { EngineKind } from "../engine/engine-kind.ts";
import type { EngineSource } from "../engine/engine-source.ts";
import type { ModelSummary } from "../hub/types.ts";
import type { CatalogueRecipe, CompatibilityRow } from "./catalogue-schema.ts";
import type { FlagLayer } from "./flag-layers.ts";
import type { ClientPlan, HostFacts, ModelFacts, PlanCheck } from "./types.ts";

export interface PlanHostConfig {
  name: string;
  modelsDir: string;
  venv: string;
  unitDir: string;
  /** The port of the unit serving now (servingPort until a blue/green swap moved it to the standby's). */
  servingPort: number;
  currentUnit: string;
}

/** What a blue/green swap needs from the host: the standby slot (or why there is none) and the config. */
export interface BlueGreenInput {
  standby: { server: string; port: number } | { missing: string };
  sharedBenchmark: "after-flip" | "reduced";
  flipBackSeconds: number;
  restartAtFullMemory: boolean;
}

export interface PlanInput {
  model: ModelSummary;
  facts: ModelFacts;
  host: HostFacts;
  hostConfig: PlanHostConfig;
  requestedTp?: number;
  swapId: string;
  /** The engine that will serve (default SGLang): its recipes, flags, memory model and unit. */
  engineKind: EngineKind;
  /**
   * The recipes to choose from (default: the shipped catalogue, then `ownRecipes`); injectable so tests
   * can plan with a broken one.
   */
  recipes?: readonly CatalogueRecipe[];
  /** The operator's own recipes (recipes.own), after the shipped ones. */
  ownRecipes?: readonly CatalogueRecipe[];
  /** The compatibility table (default: the shipped catalogue's). */
  compatibility?: readonly CompatibilityRow[];
  /** The operator's own rows (recipes.compatibility), read before the table's. */
  ownCompatibility?: readonly CompatibilityRow[];
  /** The engines the host has (its own and hosts[].engines), for the fix of a refused format. */
  hostEngines?: readonly EngineKind[];
  /** Flags beyond the recipes: the host's house flags, the model's profile, the swap's --set (flag-layers.ts). */
  flagLayers?: readonly FlagLayer[];
  /** Which engine ref the plan builds and why (flag-layers.ts chooseEngineRef), for the plan's notes. */
  engineRefWhy?: string;
  /** The engine source to build (resolved on the host: resolveEngineSource). */
  engine: EngineSource;
  /** Orgs whose models may run their own Python (hub.remoteCodeOrgs). */
  remoteCodeOrgs: readonly string[];
  /** The config's changes to known recipes (recipes.overrides). */
  recipeOverrides?: readonly RecipeOverride[];
  /**
   * bench.weightScale (default 1): the Hub's weight files are 1/N of the real model's, so every figure the
   * plan reasons with (VRAM, tp, disk, downtime) uses their sizes × N. Only the demo and the bench set it.
   */
  weightScale?: number;
  /** How clients see the swap (the front door's part read from it in preflight). */
  clients?: ClientPlan;
  /** Whether, and where, the new unit may start beside the old one; absent: the swap is cold. */
  blueGreen?: BlueGreenInput;
  /** The front door's check (preflight reads it), when the host has one. */
  frontDoorCheck?: PlanCheck;
  /**
   * A new revision loaded into the running engine (src/plan/in-place-plan.ts), or why not: when it will,
   * the swap is planned cold, at the served tp, with nothing parked and nothing beside.
   */
  inPlace?: ClientPlan["inPlace"];
  /** swaps.sleepMode: units start parkable, and a cold swap parks a parkable old unit (planPark). */
  sleepMode?: boolean;
  /** What disk retention would free on the host now (src/retention/), read when the disk is short. */
  reclaimableBytes?: number;
}

/** One entry of recipes.overrides: settings set (true: a flag without a value) or removed, and why. */
export interface RecipeOverride {
  recipe: string;
  set: Readonly<Record<string, string | true>>;
  remove: readonly string[];
  reason: string;
}
