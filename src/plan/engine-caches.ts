import { createHash } from "node:crypto";
import { engineFor } from "../engine/engines.ts";
import type { UnitEnv } from "../engine/render-unit.ts";
import type { FlagChoice, SwapPlan } from "./types.ts";

/*
 * The engines' compile caches, kept across restarts (issue #31). Beyond the weights, a start compiles:
 * Triton and torch.compile kernels, FlashInfer's and DeepGEMM's JIT, CUDA graphs. Kept, a later start of
 * the same engine build, GPU architecture, model revision and kernel flags reads them back: SGLang's
 * Qwen3-235B start fell from 390 s to 78 s with its weight cache and kept kernels, DeepSeek-V4-Pro's from
 * 8 m 1 s to 1 m 44 s with ModelExpress (../shared/DESIGN.md §10). Each unit points the engine's own cache
 * variables at one directory per key under `<modelsDir>/.modelswap/caches/`; a rollback, a restart or a
 * re-swap of the same key finds it warm, and the retention policy keeps it while a kept unit names it.
 */

/**
 * Settings that never change which kernels are compiled: where the model is, how it is reached, the
 * parsers (the engine's memory share and its park settings are left out beside these).
 */
const NOT_KERNELS = new Set([
  "model-path",
  "served-model-name",
  "host",
  "port",
  "api-key",
  "shutdown-timeout",
  // the parsers turn text into tool calls and reasoning: no kernel of theirs
  "tool-call-parser",
  "reasoning-parser",
  "enable-auto-tool-choice",
]);

/** The directory under `<modelsDir>/.modelswap/` that holds the caches. */
export const CACHES_DIR = ".modelswap/caches";

/**
 * The cache directory of a unit with these flags: `<engine>-<commit12>-sm<cc>-<model sha12>-<hash8>`, the
 * hash over the flags and the recipe's environment that choose kernels (sorted: their order is not a new
 * key). Undefined for a plan without an engine build of its own (an old record).
 */
export function engineCacheDir(plan: SwapPlan, flags: readonly FlagChoice[]): string | undefined {
  if (plan.engine === undefined) return undefined;
  const engine = engineFor(plan.engineKind);
  // the park's flags and variables (swaps.sleepMode) choose no kernel; the recipe's do (VLLM_USE_FLASHINFER_MOE_FP4…)
  const notKernels = new Set([
    ...NOT_KERNELS,
    engine.memory.setting,
    ...(engine.sleep?.settings ?? []).map((s) => s.setting),
  ]);
  const words = flags
    .filter((f) => !notKernels.has(f.setting))
    .map((f) => `${f.flag ?? f.setting}=${f.value ?? ""}`);
  const parkEnv = new Set((engine.sleep?.env ?? []).map((e) => e.name));
  const env = (plan.env ?? []).filter((e) => !parkEnv.has(e.name)).map((e) => `${e.name}=${e.value}`);
  // the build: whether it compiled its own kernels (patches on the same commit are left to the caches'
  // own keys: Triton and torch.compile key each entry by the source they compiled)
  const build = [`compileKernels=${plan.engine.compileKernels === true}`];
  const hash = createHash("sha256")
    .update([...words.sort(), "--", ...env.sort(), "--", ...build].join("\n"))
    .digest("hex")
    .slice(0, 8);
  const cc = Math.min(
    ...plan.host.gpus.map((g) => g.computeCapability.major * 10 + g.computeCapability.minor),
  );
  const arch = Number.isFinite(cc) ? `sm${cc}` : "sm0";
  const root = plan.modelDir.slice(0, plan.modelDir.lastIndexOf("/")) || "/";
  return `${root}/${CACHES_DIR}/${plan.engineKind}-${plan.engine.commit.slice(0, 12)}-${arch}-${plan.model.sha.slice(0, 12)}-${hash}`;
}

/** The engine's cache variables pointed into `dir`, under one reason. */
export function cacheEnv(plan: SwapPlan, dir: string): UnitEnv[] {
  const reason = `compile caches (Triton, torch.compile, FlashInfer, DeepGEMM…) kept in a directory of this engine build, GPU architecture, model revision and kernel flags: a restart, a rollback or a re-swap of the same starts warm`;
  return engineFor(plan.engineKind).cacheVariables.map((v) => ({
    name: v.name,
    value: `${dir}/${v.dir}`,
    reason,
  }));
}
