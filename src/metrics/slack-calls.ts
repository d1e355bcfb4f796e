import { ErrorCode, WebClient, WebClientEvent, type WebClientOptions } from "@slack/web-api";
import type { Counter, Registry } from "./registry.ts";

const PER_PROCESS =
  "Counted in this process's memory: each modelswap process reports its own calls (sum over instances).";

/** Slack error strings are short snake_case words; anything else is not used as a label value. */
const SLACK_WORD = /^[a-z0-9_]{1,64}$/;
const METHOD = /^[a-zA-Z0-9_.]{1,64}$/;

/**
 * The bot's Slack Web API calls as Prometheus counters: every call's result, the error Slack (or the
 * network) gave, and every 429 with the Retry-After the client then waited.
 */
export class SlackCallMetrics {
  private readonly calls: Counter;
  private readonly errors: Counter;
  private readonly rateLimitWait: Counter;

  constructor(registry: Registry) {
    this.calls = registry.counter(
      "modelswap_slack_api_calls_total",
      `Slack Web API calls by method and result: ok, error (Slack refused it or it never got an answer, after the client's retries), rate_limited (one per 429 answer; the client waits Retry-After and tries again, and that try is counted too). ${PER_PROCESS}`,
      ["method", "result"],
    );
    this.errors = registry.counter(
      "modelswap_slack_api_errors_total",
      `Slack Web API calls that failed, by method and Slack's error (e.g. not_in_channel, invalid_auth, ratelimited), request_failed when Slack could not be reached, or http_<status>. ${PER_PROCESS}`,
      ["method", "error"],
    );
    this.rateLimitWait = registry.counter(
      "modelswap_slack_rate_limit_wait_seconds_total",
      `Seconds Slack asked the bot to wait (Retry-After of its 429 answers), by method. ${PER_PROCESS}`,
      ["method"],
    );
  }

  ok(method: string): void {
    this.calls.inc({ method: methodLabel(method), result: "ok" });
  }

  failed(method: string, error: unknown): void {
    const m = methodLabel(method);
    this.calls.inc({ method: m, result: "error" });
    this.errors.inc({ method: m, error: errorLabel(error) });
  }

  rateLimited(method: string, retryAfterSeconds: number): void {
    const m = methodLabel(method);
    this.calls.inc({ method: m, result: "rate_limited" });
    if (Number.isFinite(retryAfterSeconds) && retryAfterSeconds > 0)
      this.rateLimitWait.inc({ method: m }, retryAfterSeconds);
  }
}

/**
 * The WebClient the bot posts with, counting each call. Subclassed rather than wrapped because the
 * client binds `chat.postMessage` and the rest to its own `apiCall` when it is built: overriding
 * `apiCall` is the one place every method goes through (the SlackPoster's posts, access control's user
 * and group look-ups alike).
 */
export class MeteredWebClient extends WebClient {
  constructor(
    private readonly metrics: SlackCallMetrics,
    token: string,
    options: WebClientOptions,
  ) {
    super(token, options);
    this.on(WebClientEvent.RATE_LIMITED, (retrySeconds: number, request: { url?: string }) => {
      const method = (request?.url ?? "").split("/").at(-1) ?? "";
      metrics.rateLimited(method, retrySeconds);
    });
  }

  override async apiCall(
    method: string,
    options?: Parameters<WebClient["apiCall"]>[1],
  ): ReturnType<WebClient["apiCall"]> {
    try {
      const result = await super.apiCall(method, options);
      this.metrics.ok(method);
      return result;
    } catch (error) {
      this.metrics.failed(method, error);
      throw error;
    }
  }
}

function methodLabel(method: string): string {
  return METHOD.test(method) ? method : "other";
}

function errorLabel(error: unknown): string {
  const e = error as { code?: string; data?: { error?: unknown }; statusCode?: unknown };
  switch (e?.code) {
    case ErrorCode.PlatformError: {
      const said = e.data?.error;
      return typeof said === "string" && SLACK_WORD.test(said) ? said : "other";
    }
    case ErrorCode.RateLimitedError:
      return "ratelimited";
    case ErrorCode.RequestError:
      return "request_failed";
    case ErrorCode.HTTPError:
      return typeof e.statusCode === "number" ? `http_${e.statusCode}` : "http_error";
    default:
      return "other";
  }
}
