import type { ExecResult } from "../../host/transport.ts";
import { judgeHttpAnswer, nanResult, type PromptResult, type SanityPrompt, splitStatus } from "../sanity.ts";

/*
 * vLLM's sanity judge: its OpenAI `/v1/completions` answer with `logprobs: 1` (choices[0].logprobs:
 * token_logprobs and tokens), and the HTTP 500 it answers when a logprob is NaN.
 */

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

/** Judges vLLM's `/v1/completions` answer (one curl result). */
export function judgeCompletion(p: SanityPrompt, result: ExecResult): PromptResult {
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
}
