import { ErrorCode, WebClient, WebClientEvent, type WebClientOptions } from "@slack/web-api";
import type { SlackCallMetrics } from "../metrics/slack-calls.ts";
import { currentStage } from "../metrics/stage-scope.ts";

/** Slack error strings are short snake_case words; anything else is not used as a label value. */
const SLACK_WORD = /^[a-z0-9_]{1,64}$/;

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
    const stage = currentStage();
    const started = performance.now();
    try {
      const result = await super.apiCall(method, options);
      this.metrics.ok(method);
      return result;
    } catch (error) {
      this.metrics.failed(method, errorLabel(error));
      throw error;
    } finally {
      if (stage !== undefined) this.metrics.waitedInStage(stage, (performance.now() - started) / 1000);
    }
  }
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
