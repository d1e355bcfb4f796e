import { parseBenchSummary } from "../bench-serving.ts";
import type { Engine } from "../engine.ts";
import { findFatalLine } from "../fatal-lines.ts";
import { httpStatus } from "../http-status.ts";
import { benchCommand } from "./bench-command.ts";
import { generateBody, generateCommand, judgeGenerate } from "./generate-judge.ts";
import { SERVING_HEALTH_PATH, servingHealthFailure } from "./serving-health.ts";
import { sglangSetup } from "./sglang-setup.ts";
import { sglangStartupPhases } from "./startup-lines.ts";

/**
 * SGLang (0.5.x): `/health_generate` answers 200 only once a one-token generation came back; sanity
 * prompts go to its native `/generate` with logprobs; `python -m sglang.bench_serving` benchmarks it.
 * Each piece's source is noted in its own module.
 */
export const sglangEngine: Engine = {
  ...sglangSetup,
  kind: "sglang",
  name: "SGLang",
  healthLabel: SERVING_HEALTH_PATH,
  healthProbe: (port, timeoutSeconds) => httpStatus(port, SERVING_HEALTH_PATH, timeoutSeconds),
  healthFailure: servingHealthFailure,
  // /get_model_info: model_path is the --model-path it was started with
  modelInfoPath: "/get_model_info",
  servedModelPath: (body) => (JSON.parse(body) as { model_path?: unknown }).model_path,
  findFatalLine,
  startupPhases: sglangStartupPhases,
  sanityRequest: (port, timeoutSeconds, prompt) => ({
    command: generateCommand(port, timeoutSeconds),
    stdin: generateBody(prompt),
  }),
  judgeSanity: judgeGenerate,
  benchCommand,
  parseBenchSummary,
  // "[s]" keeps pkill from matching the shell that runs it
  benchProcessPattern: (port) => `[s]glang.bench_serving --backend sglang --host 127.0.0.1 --port ${port} `,
};
