import { ENGINE_KINDS, type Engine, type EngineKind } from "./engine.ts";
import { sglangEngine } from "./sglang/sglang-engine.ts";
import { vllmEngine } from "./vllm/vllm-engine.ts";

const ENGINES: Readonly<Record<EngineKind, Engine>> = { sglang: sglangEngine, vllm: vllmEngine };

/**
 * The engine of this kind. Every record carries its kind (store migration v3 gave old ones theirs) and a
 * host's config default is hostEngineKind's (src/config/host-engines.ts), so callers always know it; the
 * one caller that may still pass none is makePlan (PlanInput.engineKind, optional in src/plan/make-plan.ts):
 * once that is required, `kind` is EngineKind and this default goes.
 */
export function engineFor(kind: EngineKind): Engine {
  return ENGINES[kind];
}

/** The engine a unit runs, from its ExecStart words (SGLang when none says so: units predating vLLM). */
export function engineOfExecStart(words: readonly string[]): Engine {
  return ENGINE_KINDS.map((k) => ENGINES[k]).find((e) => e.runsIn(words)) ?? sglangEngine;
}
