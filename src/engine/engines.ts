import { ENGINE_KINDS, type Engine, type EngineKind } from "./engine.ts";
import { sglangEngine } from "./sglang-engine.ts";
import { vllmEngine } from "./vllm-engine.ts";

const ENGINES: Readonly<Record<EngineKind, Engine>> = { sglang: sglangEngine, vllm: vllmEngine };

/** The engine of this kind (SGLang where a record or config predates the choice). */
export function engineFor(kind: EngineKind | undefined): Engine {
  return ENGINES[kind ?? "sglang"];
}

/** The engine a unit runs, from its ExecStart words (SGLang when none says so: units predating vLLM). */
export function engineOfExecStart(words: readonly string[]): Engine {
  return ENGINE_KINDS.map((k) => ENGINES[k]).find((e) => e.runsIn(words)) ?? sglangEngine;
}
