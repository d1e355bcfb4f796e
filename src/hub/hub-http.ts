import { setTimeout as sleep } from "node:timers/promises";
import { CodedError } from "../errors.ts";
import { type Logger, redactSecrets } from "../log.ts";

/** Waits before the 2nd, 3rd and 4th attempt of a request that failed with 5xx, 429 or a network error. */
export const DEFAULT_RETRY_DELAYS_MS: readonly number[] = [250, 1000, 2000];

export interface HubResponse {
  status: number;
  headers: Headers;
  body: Buffer;
  /** The URL that answered (after redirects). */
  url: string;
}

export interface HubHttpOptions {
  /** The Hub's base URL, e.g. `https://huggingface.co` (no trailing slash needed). */
  endpoint: string;
  token: string | undefined;
  timeoutMs: number;
  retryDelaysMs: readonly number[];
  log: Logger | undefined;
}

export interface SendOptions {
  /** Largest body accepted; a bigger answer is refused (HUB_BAD_RESPONSE) instead of being read. */
  maxBytes: number;
  /** What this request is for, in messages: "the model info of org/name". */
  what: string;
}

/**
 * GET requests to the Hub: a timeout on each attempt (headers and body), retries with backoff on 5xx,
 * 429 and network failures, a size limit on every body. The token goes only into the Authorization
 * header, never into a URL, a log record or an error.
 */
export class HubHttp {
  readonly origin: string;
  readonly base: string;

  constructor(private readonly opts: HubHttpOptions) {
    const parsed = URL.canParse(opts.endpoint) ? new URL(opts.endpoint) : undefined;
    if (
      parsed === undefined ||
      (parsed.protocol !== "http:" && parsed.protocol !== "https:") ||
      parsed.username !== "" ||
      parsed.password !== "" ||
      parsed.search !== "" ||
      parsed.hash !== ""
    ) {
      throw new CodedError(
        "CONFIG_INVALID",
        "HF_ENDPOINT is not an http(s) URL without credentials or query",
        "set HF_ENDPOINT to the Hub's base URL, e.g. https://huggingface.co (or unset it)",
      );
    }
    this.origin = parsed.origin;
    this.base = `${parsed.origin}${parsed.pathname.replace(/\/+$/, "")}`;
  }

  /** The text with the token, should the Hub have echoed it anywhere, replaced by `[redacted]`. */
  redact(text: string): string {
    return this.opts.token ? redactSecrets(text, [this.opts.token]) : text;
  }

  /** Sends a GET; answers every status except 5xx/429 (those are retried, then HUB_UNAVAILABLE). */
  async get(url: URL, send: SendOptions): Promise<HubResponse> {
    if (url.origin !== this.origin) {
      throw badResponse(`a link for ${send.what} points to another host (${url.origin})`);
    }
    const headers: Record<string, string> = {
      Accept: "application/json",
      "User-Agent": "modelswap/0.1 (hub-client)",
    };
    if (this.opts.token !== undefined && this.opts.token !== "") {
      headers.Authorization = `Bearer ${this.opts.token}`;
    }
    const attempts = this.opts.retryDelaysMs.length + 1;
    const where = this.redact(url.href);
    let lastProblem = "";
    let lastCause: unknown;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      const started = Date.now();
      const signal = AbortSignal.timeout(this.opts.timeoutMs);
      try {
        const res = await fetch(url, { headers, signal, redirect: "follow" });
        if (res.status >= 500 || res.status === 429) {
          await res.body?.cancel().catch(() => undefined);
          lastProblem = res.status === 429 ? "rate limited (HTTP 429)" : `HTTP ${res.status}`;
          lastCause = undefined;
        } else {
          const body = await readBody(res, send);
          this.opts.log?.debug(
            { url: where, status: res.status, bytes: body.length, ms: Date.now() - started },
            "hub request",
          );
          return { status: res.status, headers: res.headers, body, url: res.url || url.href };
        }
      } catch (error) {
        if (error instanceof CodedError) throw error;
        lastProblem = networkProblem(error, this.opts.timeoutMs);
        lastCause = error;
      }
      const delay = this.opts.retryDelaysMs[attempt - 1];
      if (delay === undefined) break;
      this.opts.log?.warn(
        { url: where, attempt, of: attempts, problem: lastProblem, retryInMs: delay },
        "hub request failed, retrying",
      );
      await sleep(delay);
    }
    this.opts.log?.error({ url: where, attempts, problem: lastProblem }, "hub unavailable");
    throw new CodedError(
      "HUB_UNAVAILABLE",
      `The Hugging Face Hub at ${this.origin} is unavailable: ${lastProblem} on ${attempts} attempts to read ${send.what}`,
      `Check that the bot can reach ${this.origin} (and https://status.huggingface.co for huggingface.co), then retry.`,
      lastCause === undefined ? undefined : { cause: lastCause },
    );
  }
}

/** Reads a body up to `maxBytes`; a larger one is refused without reading it all. */
async function readBody(res: Response, send: SendOptions): Promise<Buffer> {
  const tooLarge = () =>
    badResponse(`the answer for ${send.what} is larger than ${send.maxBytes} bytes, which no real one is`);
  const declared = Number(res.headers.get("content-length") ?? Number.NaN);
  if (Number.isFinite(declared) && declared > send.maxBytes) {
    await res.body?.cancel().catch(() => undefined);
    throw tooLarge();
  }
  if (res.body === null) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
    total += chunk.byteLength;
    if (total > send.maxBytes) throw tooLarge();
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}

/** A network failure in words: "no answer within 30 s", "connection refused (ECONNREFUSED)". */
function networkProblem(error: unknown, timeoutMs: number): string {
  if (error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError")) {
    return `no answer within ${timeoutMs / 1000} s`;
  }
  const cause = error instanceof Error ? (error.cause as { code?: unknown } | undefined) : undefined;
  const code = typeof cause?.code === "string" ? cause.code : undefined;
  switch (code) {
    case "ECONNREFUSED":
      return "connection refused (ECONNREFUSED)";
    case "ECONNRESET":
    case "UND_ERR_SOCKET":
      return `connection closed before the answer was complete (${code})`;
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `the host name does not resolve (${code})`;
    case "ETIMEDOUT":
    case "UND_ERR_CONNECT_TIMEOUT":
      return `the connection timed out (${code})`;
    case undefined:
      return "the connection failed";
    default:
      return `the connection failed (${code})`;
  }
}

export function badResponse(what: string): CodedError {
  return new CodedError(
    "HUB_BAD_RESPONSE",
    `The Hub's answer is not usable: ${what}`,
    "Check that HF_ENDPOINT points at the Hugging Face Hub or a faithful mirror; if it does, retry later and report the repository if it keeps happening.",
  );
}
