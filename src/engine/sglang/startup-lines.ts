import { phasesFrom, type StartupPhases } from "../startup-phases.ts";

/*
 * SGLang's own timing lines (python/sglang/srt/model_executor/model_runner.py), each rank's behind its
 * `[2026-02-26 05:24:09 TP4] ` prefix:
 *   load_model:        "Load weight end. elapsed=228.09 s, type=GlmMoeDsaForCausalLM, dtype=…, avail mem=…"
 *   init_device_graphs: "Capture cuda graph end. Time elapsed: 9.20 s. mem usage=…" (0.4/0.5 releases), and
 *                      "Capture target decode CUDA graph end. elapsed=22.18 s, mem usage=…" (later ones,
 *                      one per graph a speculative setup captures)
 */
const WEIGHTS = /Load weight end\. elapsed=(?<seconds>[\d.]+) s(?:, type=(?<key>\w+))?/;
const GRAPHS =
  /Capture (?<key>(?:[\w-]+ )*?)cuda graph end\. (?:Time elapsed: |elapsed=)(?<seconds>[\d.]+) ?s/i;

/** Where an SGLang server's start went, from its journal. */
export function sglangStartupPhases(journal: readonly string[]): StartupPhases {
  return phasesFrom(journal, { weightsSeconds: WEIGHTS, graphsSeconds: GRAPHS });
}
