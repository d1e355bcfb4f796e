import { phasesFrom, type StartupPhases } from "../startup-phases.ts";

/*
 * vLLM's own timing lines, each behind its `(VllmWorker rank=1 pid=123) INFO 03-20 10:00:00 [file.py:n] `
 * prefix (one per tensor-parallel worker):
 *   vllm/model_executor/model_loader/default_loader.py: "Loading weights took 12.34 seconds"
 *   vllm/compilation/monitor.py (end_monitoring_torch_compile): "torch.compile takes 24.18 s in total"
 *   vllm/v1/worker/gpu_model_runner.py (capture_model):  "Graph capturing finished in 9 secs, took 0.52 GiB"
 */
const WEIGHTS = /Loading weights took (?<seconds>[\d.]+) seconds/;
const COMPILE = /torch\.compile takes (?<seconds>[\d.]+) s in total/;
const GRAPHS = /Graph capturing finished in (?<seconds>[\d.]+) secs/;

/** Where a vLLM server's start went, from its journal. */
export function vllmStartupPhases(journal: readonly string[]): StartupPhases {
  return phasesFrom(journal, { weightsSeconds: WEIGHTS, compileSeconds: COMPILE, graphsSeconds: GRAPHS });
}
