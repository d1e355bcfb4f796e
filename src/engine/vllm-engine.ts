import { sh } from "../host/shell-quote.ts";
import { parseBenchSummary } from "./bench-serving.ts";
import type { Engine } from "./engine.ts";
import { findFatalLine } from "./fatal-lines.ts";
import { httpStatus } from "./http-status.ts";
import {
  judgeHttpAnswer,
  MAX_NEW_TOKENS,
  nanResult,
  type PromptResult,
  postJsonCommand,
  splitStatus,
} from "./sanity.ts";
import { healthFailureOf } from "./serving-health.ts";
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

/**
 * A non-streamed answer with a NaN logprob cannot be serialised (Starlette's JSONResponse uses
 * json.dumps(allow_nan=False)): vLLM answers 500 "Internal Server Error" and logs "ValueError: Out of
 * range float values are not JSON compliant" (vllm-project/vllm#13035). The sanity check reads that 500
 * as the NaN it is.
 */
const NAN_500 = /^Internal Server Error$/;

/** One choice of an OpenAI completions answer, as far as the sanity check reads it. */
interface CompletionChoice {
  text?: unknown;
  logprobs?: { token_logprobs?: unknown; tokens?: unknown } | null;
}

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
  sanityRequest: (port, timeoutSeconds, prompt) => ({
    command: postJsonCommand(`http://127.0.0.1:${port}/v1/completions`, timeoutSeconds),
    stdin: JSON.stringify({ prompt, max_tokens: MAX_NEW_TOKENS, temperature: 0, logprobs: 1 }),
  }),
  judgeSanity(p, result): PromptResult {
    const { status, body } = splitStatus(result.stdout);
    if (result.code === 0 && status === 500 && NAN_500.test(body.trim()))
      return nanResult(
        p,
        "HTTP 500 from /v1/completions: vLLM answers so when it cannot write its logprobs as JSON, which is NaN (vllm-project/vllm#13035)",
      );
    return judgeHttpAnswer(p, result, "/v1/completions", (answer) => {
      const choice = (answer as { choices?: CompletionChoice[] }).choices?.[0];
      const logprobs = choice?.logprobs?.token_logprobs;
      const tokens = choice?.logprobs?.tokens;
      return {
        output: typeof choice?.text === "string" ? choice.text : "",
        logprobs: Array.isArray(logprobs) ? logprobs : [],
        tokenKeys: Array.isArray(tokens) ? tokens.map((t) => String(t)) : [],
      };
    });
  },
  benchCommand(opts) {
    const vllm = `${opts.venv.replace(/\/+$/, "")}/bin/vllm`;
    const served =
      opts.servedModelName === undefined ? sh`` : sh`--served-model-name ${opts.servedModelName}`;
    return sh`${vllm} bench serve --backend vllm --base-url ${`http://127.0.0.1:${opts.port}`} --model ${opts.model} ${served} --dataset-name ${opts.datasetName ?? "random"} --random-input-len ${opts.inputLen} --random-output-len ${opts.outputLen} --random-range-ratio 1 --num-prompts ${opts.numPrompts} --max-concurrency ${opts.concurrency} --seed ${opts.seed} --disable-tqdm`;
  },
  // `vllm bench serve` prints the same "{label:<40} {value}" summary as SGLang's bench_serving
  parseBenchSummary,
  benchProcessPattern: (port) => `[v]llm bench serve --backend vllm --base-url http://127.0.0.1:${port} `,
};
