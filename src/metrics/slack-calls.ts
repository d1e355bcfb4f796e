import { Counter, type Registry } from "prom-client";

const PER_PROCESS =
  "Counted in this process's memory: each modelswap process reports its own calls (sum over instances).";

const METHOD = /^[a-zA-Z0-9_.]{1,64}$/;

/**
 * The bot's Slack Web API calls as Prometheus counters: every call's result, the error Slack (or the
 * network) gave, and every 429 with the Retry-After the client then waited.
 */
export class SlackCallMetrics {
  private readonly calls: Counter<"method" | "result">;
  private readonly errors: Counter<"method" | "error">;
  private readonly rateLimitWait: Counter<"method">;
  private readonly stageWait: Counter<"stage">;

  constructor(registry: Registry) {
    this.calls = new Counter({
      name: "modelswap_slack_api_calls_total",
      help: `Slack Web API calls by method and result: ok, error (Slack refused it or it never got an answer, after the client's retries), rate_limited (one per 429 answer; the client waits Retry-After and tries again, and that try is counted too). ${PER_PROCESS}`,
      labelNames: ["method", "result"],
      registers: [registry],
    });
    this.errors = new Counter({
      name: "modelswap_slack_api_errors_total",
      help: `Slack Web API calls that failed, by method and Slack's error (e.g. not_in_channel, invalid_auth, ratelimited), request_failed when Slack could not be reached, or http_<status>. ${PER_PROCESS}`,
      labelNames: ["method", "error"],
      registers: [registry],
    });
    this.rateLimitWait = new Counter({
      name: "modelswap_slack_rate_limit_wait_seconds_total",
      help: `Seconds Slack asked the bot to wait (Retry-After of its 429 answers), by method. ${PER_PROCESS}`,
      labelNames: ["method"],
      registers: [registry],
    });
    this.stageWait = new Counter({
      name: "modelswap_slack_wait_in_stages_seconds_total",
      help: `Seconds a swap's stage spent waiting on a Slack call, by stage. 0 by design: stages emit events and the reporter alone calls Slack, so a slow or rate-limited Slack never holds a swap back; anything above 0 is a defect. ${PER_PROCESS}`,
      labelNames: ["stage"],
      registers: [registry],
    });
  }

  /** A Slack call was made from inside a swap's stage and took this long. */
  waitedInStage(stage: string, seconds: number): void {
    this.stageWait.inc({ stage: methodLabel(stage) }, seconds);
  }

  ok(method: string): void {
    this.calls.inc({ method: methodLabel(method), result: "ok" });
  }

  /** `error`: Slack's error word, request_failed, http_<status>, ratelimited or other. */
  failed(method: string, error: string): void {
    const m = methodLabel(method);
    this.calls.inc({ method: m, result: "error" });
    this.errors.inc({ method: m, error });
  }

  rateLimited(method: string, retryAfterSeconds: number): void {
    const m = methodLabel(method);
    this.calls.inc({ method: m, result: "rate_limited" });
    if (Number.isFinite(retryAfterSeconds) && retryAfterSeconds > 0)
      this.rateLimitWait.inc({ method: m }, retryAfterSeconds);
  }
}

function methodLabel(method: string): string {
  return METHOD.test(method) ? method : "other";
}
