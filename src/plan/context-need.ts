import type { EngineKind } from "../engine/engine-kind.ts";
import type { EngineMemory } from "../engine/engine-setup.ts";
import type { CatalogueRecipe } from "./catalogue-schema.ts";
import { type ContextNeed, kvBytesPerToken } from "./choose-tp.ts";
import type { FlagLayer } from "./flag-layers.ts";
import type { ModelFacts } from "./types.ts";

/**
 * The context the KV cache must hold: the context-length the recipes or the config and swap set (the last
 * one wins, as for the flags), else, for an engine that refuses to start without room for the whole
 * context (vLLM), the model's own maximum; none for SGLang without one (it caps the context itself).
 */
export function contextNeed(
  facts: ModelFacts,
  applied: readonly CatalogueRecipe[],
  layers: readonly FlagLayer[],
  engine: { kind: EngineKind; memory: EngineMemory },
): ContextNeed | undefined {
  let tokens: number | undefined;
  let why = "";
  for (const r of applied)
    for (const f of r.flags)
      if (f.setting === "context-length" && typeof f.value === "string") {
        tokens = Number(f.value);
        why = `context-length ${f.value} (recipe ${r.id})`;
      }
  let fp8Cache = false;
  for (const layer of layers)
    for (const s of layer.settings) {
      if (s.setting === "context-length" && s.value !== undefined && /^[0-9]+$/.test(s.value)) {
        tokens = Number(s.value);
        why = `context-length ${s.value} from ${layer.from}`;
      }
      if (s.setting === "kv-cache-dtype") fp8Cache = s.value?.startsWith("fp8") === true;
    }
  if (tokens === undefined && engine.memory.needsFullContext) {
    tokens = facts.maxContext;
    why = `the model's whole context (max_position_embeddings), which ${engine.memory.engine} must hold to start`;
  }
  if (tokens === undefined || tokens <= 0) return undefined;
  return { tokens, why, kvBytesPerToken: (tp) => kvBytesPerToken(facts, tp, fp8Cache ? 1 : 2) };
}
