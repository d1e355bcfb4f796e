/**
 * Sanity check of a freshly started server, whichever engine. Health passing is not sanity: with broken
 * kernels (NVFP4 on sm_120 without the FlashInfer backends) the server is healthy and answers every
 * prompt with `!!!!…` (argmax fell to token 0) and null logprobs (orjson writes NaN as null). This
 * asks a few deterministic questions at temperature 0 with logprobs, through the engine's own request
 * (SGLang's `POST /generate`: sglang/generate-judge.ts; vLLM's `/v1/completions`:
 * vllm/completions-judge.ts), via curl on the host (the serving port is usually bound to loopback), and
 * judges the answers the engine reads out (judgeTokens).
 */
import { type ErrorCode, isCodedError } from "../errors.ts";
import type { ShellCommand } from "../host/shell-quote.ts";
import { sh } from "../host/shell-quote.ts";
import type { ExecResult, HostTransport } from "../host/transport.ts";

/** Runs a command on the host: a transport's `exec` (bound), or a fake in tests. */
export type Exec = HostTransport["exec"];

export interface SanityPrompt {
  /** Raw completion prompt (no chat template, so every model, base or instruct, continues it). */
  prompt: string;
  /** A word the continuation must contain (whole word, any case); absent for open prompts. */
  expected?: string;
}

/**
 * Prompts a real model of any size and the simulated engine (its known-answer table) both complete
 * correctly within 32 tokens, plus one open prompt whose longer output shows repetition loops.
 */
export const SANITY_PROMPTS: readonly SanityPrompt[] = [
  { prompt: "The capital of France is", expected: "Paris" },
  { prompt: "The largest planet in our solar system is", expected: "Jupiter" },
  { prompt: "The chemical symbol for gold is", expected: "Au" },
  { prompt: "Here is a short story about a lighthouse keeper:" },
];

export const MAX_NEW_TOKENS = 32;
/** One token making up at least this share of an output means the model is looping. */
export const REPETITION_SHARE = 0.8;
/** Shorter outputs are not judged for repetition (" Paris." is two tokens, `4` one). */
export const REPETITION_MIN_TOKENS = 8;

export type SanityVerdict = "ok" | "nan" | "empty" | "repetitive" | "wrong-answer" | "error";

export interface PromptResult {
  prompt: string;
  expected?: string;
  /** The generated text ("" when the request failed). */
  output: string;
  tokens: number;
  /** Output tokens whose logprob came back as null (NaN serialised by orjson) … */
  nullLogprobs: number;
  /** … or as a bare NaN / non-finite number. */
  nanLogprobs: number;
  /** Share of the output taken by its most frequent token (0 for an empty output). */
  topTokenShare: number;
  verdict: SanityVerdict;
  detail: string;
}

export interface SanityReport {
  ok: boolean;
  prompts: PromptResult[];
  summary: string;
}

/** What the sanity check asks of an engine (src/engine/engine.ts): one prompt's request, and its judge. */
export interface SanityEngine {
  sanityRequest(
    port: number,
    timeoutSeconds: number,
    prompt: string,
  ): { command: ShellCommand; stdin: string };
  judgeSanity(prompt: SanityPrompt, result: ExecResult): PromptResult;
}

export interface SanityOptions {
  /** Limit for each request (default 60 s: the first requests after start-up can be slow). */
  timeoutMs?: number;
  prompts?: readonly SanityPrompt[];
}

/** Connection problems say nothing about the model: they are thrown, not judged. */
const CONNECTION_CODES: ReadonlySet<ErrorCode> = new Set([
  "HOST_UNREACHABLE",
  "HOST_KEY_MISMATCH",
  "HOST_AUTH_FAILED",
  "HOST_CONNECTION_LOST",
]);

const HTTP_MARK = "\n__modelswap_http_status__=";

/** curl of a JSON POST (the body on its standard input), printing the body, then the HTTP status after a mark. */
export function postJsonCommand(url: string, timeoutSeconds: number): ShellCommand {
  return sh`curl -sS --max-time ${timeoutSeconds} -X POST -H ${"Content-Type: application/json"} --data-binary @- -w ${`${HTTP_MARK}%{http_code}`} ${url}`;
}

/** A postJsonCommand's output: the HTTP status (null when none came) and the body before it. */
export function splitStatus(stdout: string): { status: number | null; body: string } {
  const at = stdout.lastIndexOf(HTTP_MARK);
  const status = at < 0 ? null : Number(stdout.slice(at + HTTP_MARK.length).trim()) || null;
  return { status, body: at < 0 ? stdout : stdout.slice(0, at) };
}

/**
 * Runs the sanity prompts against the server on `port` of the host behind `exec` and judges each:
 * NaN or null logprobs, empty output, one token repeated over ≥ 80 % of the output, or a missed
 * known answer fail it. Never throws for what the server answers (a failed request is an "error"
 * verdict); throws only when the host itself cannot be reached.
 */
export async function runSanity(
  engine: SanityEngine,
  exec: Exec,
  port: number,
  opts: SanityOptions = {},
): Promise<SanityReport> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const prompts = opts.prompts ?? SANITY_PROMPTS;
  const seconds = Math.max(1, Math.ceil(timeoutMs / 1000));
  const results = await Promise.all(
    prompts.map(async (p): Promise<PromptResult> => {
      let result: ExecResult;
      const request = engine.sanityRequest(port, seconds, p.prompt);
      try {
        result = await exec(request.command, {
          stdin: request.stdin,
          timeoutMs: timeoutMs + 5_000,
          maxOutputBytes: 1024 * 1024,
        });
      } catch (error) {
        if (isCodedError(error) && CONNECTION_CODES.has(error.code)) throw error;
        return failed(p, error instanceof Error ? error.message : String(error));
      }
      return engine.judgeSanity(p, result);
    }),
  );
  const ok = results.every((r) => r.verdict === "ok");
  return { ok, prompts: results, summary: summarize(ok, results) };
}

function failed(p: SanityPrompt, detail: string): PromptResult {
  return {
    prompt: p.prompt,
    ...(p.expected === undefined ? {} : { expected: p.expected }),
    output: "",
    tokens: 0,
    nullLogprobs: 0,
    nanLogprobs: 0,
    topTokenShare: 0,
    verdict: "error",
    detail,
  };
}

/** What an answer says, in any engine's format: its text, and each token's logprob with a key (its id or text). */
export interface AnswerTokens {
  output: string;
  logprobs: readonly unknown[];
  tokenKeys: readonly (string | number)[];
  /** The server's own count, where the answer has no tokens listed. */
  completionTokens?: number;
}

/**
 * Judges one curl result of a JSON POST to `route` (postJsonCommand): a failed request or an answer that
 * is not JSON is an "error"; otherwise `read` takes the tokens out of the engine's answer.
 */
export function judgeHttpAnswer(
  p: SanityPrompt,
  result: ExecResult,
  route: string,
  read: (answer: object) => AnswerTokens,
): PromptResult {
  const { status, body } = splitStatus(result.stdout);
  if (result.code !== 0 || status === null) return failed(p, curlReason(result.code, result.stderr));
  if (status !== 200) return failed(p, `HTTP ${status} from ${route}: ${oneLine(body, 200)}`);
  let answer: unknown;
  try {
    answer = parseLenient(body);
  } catch {
    return failed(p, `${route} answered something that is not JSON: ${oneLine(body, 200)}`);
  }
  if (answer === null || typeof answer !== "object" || Array.isArray(answer))
    return failed(p, `${route} answered an unexpected shape: ${oneLine(body, 200)}`);
  return judgeTokens(p, read(answer));
}

/** NaN or null logprobs, empty output, one token repeated, a missed known answer: the verdict on an answer. */
export function judgeTokens(p: SanityPrompt, answer: AnswerTokens): PromptResult {
  const { output, logprobs, tokenKeys } = answer;
  let nullLogprobs = 0;
  let nanLogprobs = 0;
  for (const logprob of logprobs) {
    if (logprob === null || logprob === undefined) nullLogprobs++;
    else if (typeof logprob !== "number" || !Number.isFinite(logprob)) nanLogprobs++;
  }
  const tokens = tokenKeys.length > 0 ? tokenKeys.length : (answer.completionTokens ?? 0);
  const topTokenShare = tokenKeys.length === 0 ? 0 : maxCount(tokenKeys) / tokenKeys.length;
  const base = {
    prompt: p.prompt,
    ...(p.expected === undefined ? {} : { expected: p.expected }),
    output,
    tokens,
    nullLogprobs,
    nanLogprobs,
    topTokenShare,
  };
  const shown = quoteOutput(output);
  if (nullLogprobs > 0 || nanLogprobs > 0) {
    const bad = nullLogprobs + nanLogprobs;
    return {
      ...base,
      verdict: "nan",
      detail: `${bad} of ${logprobs.length > 0 ? logprobs.length : tokens} logprobs are ${nanLogprobs > 0 ? "NaN" : "null (NaN)"}; output ${shown}`,
    };
  }
  if (output.trim() === "") return { ...base, verdict: "empty", detail: "the model generated no text" };
  if (tokenKeys.length >= REPETITION_MIN_TOKENS && topTokenShare >= REPETITION_SHARE) {
    return {
      ...base,
      verdict: "repetitive",
      detail: `one token is ${Math.round(topTokenShare * 100)} % of the output: ${shown}`,
    };
  }
  if (p.expected !== undefined && !containsWord(output, p.expected)) {
    return { ...base, verdict: "wrong-answer", detail: `expected "${p.expected}", got ${shown}` };
  }
  return { ...base, verdict: "ok", detail: shown };
}

/** A prompt whose answer was NaN though it carried no tokens to show it (the server could not send them). */
export function nanResult(p: SanityPrompt, detail: string): PromptResult {
  return { ...failed(p, detail), nanLogprobs: 1, verdict: "nan" };
}

/**
 * JSON.parse that also accepts Python's bare NaN / Infinity (a server serialising with the json module
 * instead of orjson writes them); they become the string "NaN" / "Infinity" and count as NaN logprobs.
 */
function parseLenient(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    const fixed = text.replace(/([[,:]\s*)(-?Infinity|NaN)(?=\s*[,\]}])/g, '$1"$2"');
    if (fixed === text) throw error;
    return JSON.parse(fixed);
  }
}

function maxCount(ids: readonly (string | number)[]): number {
  const counts = new Map<string | number, number>();
  let max = 0;
  for (const id of ids) {
    const n = (counts.get(id) ?? 0) + 1;
    counts.set(id, n);
    if (n > max) max = n;
  }
  return max;
}

function containsWord(text: string, word: string): boolean {
  const escaped = word.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`(?<![\\p{L}\\p{N}])${escaped}(?![\\p{L}\\p{N}])`, "iu").test(text);
}

function quoteOutput(output: string): string {
  return JSON.stringify(output.length > 80 ? `${output.slice(0, 79)}…` : output);
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat || "(empty body)";
}

function curlReason(code: number | null, stderr: string): string {
  if (code === 7) return "connection refused: nothing listens on the serving port";
  if (code === 28) return "timed out: the server accepted the request but did not answer in time";
  if (code === 52) return "the server closed the connection without answering";
  if (code === 127) return "curl is not installed on the host";
  return stderr.trim().split("\n")[0] || `curl exited ${code}`;
}

function summarize(ok: boolean, results: readonly PromptResult[]): string {
  const n = results.length;
  if (ok) {
    const sample = results.find((r) => r.expected !== undefined) ?? results[0];
    return sample === undefined
      ? "no prompts to check"
      : `${n}/${n} prompts answered sanely (e.g. "${sample.prompt}" → ${quoteOutput(sample.output)})`;
  }
  const bad = results.filter((r) => r.verdict !== "ok");
  const byVerdict = new Map<SanityVerdict, PromptResult[]>();
  for (const r of bad) byVerdict.set(r.verdict, [...(byVerdict.get(r.verdict) ?? []), r]);
  const parts = [...byVerdict].map(([verdict, rs]) => `${rs.length} ${LABEL[verdict]}`);
  // One line: each prompt's own answer is told apart (the thread lists them).
  let text = `${bad.length}/${n} prompts failed (${parts.join(", ")})`;
  if (byVerdict.has("nan")) {
    const bangs = results.some((r) => r.verdict === "nan" && /^!+$/.test(r.output));
    text += bangs ? ': NaN logits (argmax fell to token 0, "!!!!")' : ": NaN logits";
  } else if (bad.length === 1 && bad[0] !== undefined) {
    text += `: "${bad[0].prompt}" → ${bad[0].detail}`;
  }
  return text;
}

const LABEL: Record<SanityVerdict, string> = {
  ok: "ok",
  nan: "NaN/null logprobs",
  empty: "empty",
  repetitive: "repetitive",
  "wrong-answer": "wrong answer",
  error: "request failed",
};
