import type { Engine, EngineKind } from "./engine.ts";
import { sglangEngine } from "./sglang-engine.ts";
import { vllmEngine } from "./vllm-engine.ts";

const ENGINES: Readonly<Record<EngineKind, Engine>> = { sglang: sglangEngine, vllm: vllmEngine };

/** The engine a host serves with (hosts[].engine; SGLang where a record or config predates the choice). */
export function engineFor(kind: EngineKind | undefined): Engine {
  return ENGINES[kind ?? "sglang"];
}
