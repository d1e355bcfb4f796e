import { parseBenchSummary } from "../bench-serving.ts";
import type { Engine } from "../engine.ts";
import { findFatalLine } from "../fatal-lines.ts";
import { healthFailureOf } from "../health-failure.ts";
import { httpStatus } from "../http-status.ts";
import { MAX_NEW_TOKENS, postJsonCommand } from "../sanity.ts";
import { vllmBenchCommand } from "./bench-command.ts";
import { judgeCompletion } from "./completions-judge.ts";
import { vllmStartupPhases } from "./startup-lines.ts";
import { vllmSetup } from "./vllm-setup.ts";

/*
 * vLLM (0.18, the first release with --shutdown-timeout), the run-time half: what a swap, the monitor and
 * /llm status ask of a vLLM server; its plan half is vllm-setup.ts. Sources: testbench/gpu-host/VLLM.md,
 * which cites vllm-project/vllm for each behaviour the bench imitates.
 */

/**
 * vLLM's `GET /health` answers 200 without running the model (EngineClient.check_health), so a model that
 * loads but cannot sample would pass it: the health probe is a 1-token completion instead (the OpenAI
 * completions route; `model` left out, so the one served model answers).
 */
const HEALTH_BODY = JSON.stringify({ prompt: "Hi", max_tokens: 1, temperature: 0 });
const HEALTH_LABEL = "a 1-token /v1/completions";

/** vLLM's log prefix: `(EngineCore_DP0 pid=123) ERROR 03-20 10:00:00 [core.py:708] ` (vllm/logger.py). */
const LOG_PREFIX = /^\([\w.-]+ pid=\d+\) (?:[A-Z]+ \d\d-\d\d \d\d:\d\d:\d\d \[[^\]]*\] )?/;

export const vllmEngine: Engine = {
  ...vllmSetup,
  kind: "vllm",
  name: "vLLM",
  healthLabel: HEALTH_LABEL,
  healthProbe: (port, timeoutSeconds) => httpStatus(port, "/v1/completions", timeoutSeconds, HEALTH_BODY),
  healthFailure: (status, curlExit, timeoutSeconds) =>
    healthFailureOf(HEALTH_LABEL, status, curlExit, timeoutSeconds),
  // /v1/models: each model card's `root` is the path the server loaded (vllm/entrypoints/openai/serving_models.py)
  modelInfoPath: "/v1/models",
  servedModelPath: (body) => (JSON.parse(body) as { data?: { root?: unknown }[] }).data?.[0]?.root,
  // vLLM writes its tracebacks behind its log prefix (the engine core's as ERROR lines): read without it
  findFatalLine: (journal) => findFatalLine(journal.map((line) => line.replace(LOG_PREFIX, ""))),
  startupPhases: vllmStartupPhases,
  sanityRequest: (port, timeoutSeconds, prompt) => ({
    command: postJsonCommand(`http://127.0.0.1:${port}/v1/completions`, timeoutSeconds),
    stdin: JSON.stringify({ prompt, max_tokens: MAX_NEW_TOKENS, temperature: 0, logprobs: 1 }),
  }),
  judgeSanity: judgeCompletion,
  benchCommand: vllmBenchCommand,
  // `vllm bench serve` prints the same "{label:<40} {value}" summary as SGLang's bench_serving
  parseBenchSummary,
  benchProcessPattern: (port) => `[v]llm bench serve --backend vllm --base-url http://127.0.0.1:${port} `,
};
