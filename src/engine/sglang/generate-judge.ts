import type { ShellCommand } from "../../host/shell-quote.ts";
import type { ExecResult } from "../../host/transport.ts";
import {
  judgeHttpAnswer,
  MAX_NEW_TOKENS,
  type PromptResult,
  postJsonCommand,
  type SanityPrompt,
} from "../sanity.ts";

/*
 * SGLang's sanity request and its judge: the native `POST /generate` with logprobs, whose answer lists
 * each output token's logprob with its id (`meta_info.output_token_logprobs`: [logprob, id, text]) and
 * writes a NaN logprob as null (orjson).
 */

/** The curl command that POSTs the JSON on its standard input to `/generate` on the host's loopback. */
export function generateCommand(port: number, timeoutSeconds: number): ShellCommand {
  return postJsonCommand(`http://127.0.0.1:${port}/generate`, timeoutSeconds);
}

/** The request body for one prompt (sent on stdin, never on the command line). */
export function generateBody(prompt: string): string {
  return JSON.stringify({
    text: prompt,
    sampling_params: { temperature: 0, max_new_tokens: MAX_NEW_TOKENS },
    return_logprob: true,
    return_text_in_logprobs: true,
  });
}

interface GenerateAnswer {
  text?: unknown;
  output_ids?: unknown;
  meta_info?: { output_token_logprobs?: unknown; completion_tokens?: unknown };
}

/** Judges SGLang's `/generate` answer (one curl result). */
export function judgeGenerate(p: SanityPrompt, result: ExecResult): PromptResult {
  return judgeHttpAnswer(p, result, "/generate", (raw) => {
    const answer = raw as GenerateAnswer;
    const logprobs: unknown[] = [];
    const ids: number[] = [];
    const entries = answer.meta_info?.output_token_logprobs;
    if (Array.isArray(entries)) {
      for (const entry of entries) {
        const [logprob, id] = Array.isArray(entry) ? entry : [entry, undefined];
        logprobs.push(logprob);
        if (typeof id === "number") ids.push(id);
      }
    }
    if (ids.length === 0 && Array.isArray(answer.output_ids))
      for (const id of answer.output_ids) if (typeof id === "number") ids.push(id);
    const completion = Number(answer.meta_info?.completion_tokens);
    return {
      output: typeof answer.text === "string" ? answer.text : "",
      logprobs,
      tokenKeys: ids,
      ...(Number.isFinite(completion) ? { completionTokens: completion } : {}),
    };
  });
}
