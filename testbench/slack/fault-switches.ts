import type { JsonObject } from "./types.ts";

/** A forced answer: the call fails with this error (and HTTP status) instead of running. */
export interface ForcedAnswer {
  error: string;
  status: number;
}

/** failNext: the next `remaining` calls of a method (whose arguments `where` accepts) fail. */
export interface ForcedFailure extends ForcedAnswer {
  remaining: number;
  where?: (args: JsonObject) => boolean;
}

/** failFor: every call of these methods fails until `until` (ms since the epoch). */
export interface Outage extends ForcedAnswer {
  /** Method names; "*" is every method. */
  methods: ReadonlySet<string>;
  until: number;
}

/**
 * The Web API's fault switches that are not rate limits (those are the RateLimiter's): answers forced to
 * fail (`failNext`), outage windows (`failFor`, `endOutage`) and slow answers (`setApiDelay`). The API
 * server (api-server.ts) consults them on every call, after authentication and before the rate limits
 * (web-api.ts, handleApiCall).
 */
export class ApiFaults {
  /** The next calls of a method that fail, by method (several, each with its own filter). */
  readonly forced = new Map<string, ForcedFailure[]>();
  /** Outage windows, oldest first; expired ones are dropped as calls come in. */
  readonly outages: Outage[] = [];
  /** Delay in ms before answering, by method ("*" for all). */
  readonly delays = new Map<string, number>();

  /**
   * The next `count` calls of `method` answer `{ok:false, error}` (with HTTP `status`, default 200); with
   * `where`, only calls whose arguments it accepts (e.g. the edits of one message: side-by-side tests each
   * fail their own). A second failNext of a method without `where` replaces the first.
   */
  failNext(
    method: string,
    error: string,
    opts: { count?: number; status?: number; where?: (args: JsonObject) => boolean } = {},
  ): void {
    const failure: ForcedFailure = {
      error,
      status: opts.status ?? 200,
      remaining: opts.count ?? 1,
      ...(opts.where === undefined ? {} : { where: opts.where }),
    };
    const kept = (this.forced.get(method) ?? []).filter((f) => f.where !== undefined);
    this.forced.set(
      method,
      opts.where === undefined ? [...kept, failure] : [...(this.forced.get(method) ?? []), failure],
    );
  }

  /**
   * A Slack outage: every call of `methods` ("*" for all) answers `{ok:false, error}` with HTTP `status`
   * (default 200) for the next `ms` milliseconds. Windows may overlap; the one opened first answers.
   */
  failFor(methods: string | string[], error: string, opts: { ms: number; status?: number }): void {
    if (!Number.isFinite(opts.ms) || opts.ms < 0) throw new Error(`failFor: ms must be ≥ 0, got ${opts.ms}`);
    const list = typeof methods === "string" ? [methods] : methods;
    if (list.length === 0) throw new Error("failFor: no methods");
    this.outages.push({
      methods: new Set(list),
      error,
      status: opts.status ?? 200,
      until: Date.now() + opts.ms,
    });
  }

  /** Ends every outage window now. */
  endOutage(): void {
    this.outages.length = 0;
  }

  /** Delays every answer of `method` ("*" for all) by `ms`; 0 removes the delay. */
  setApiDelay(method: string, ms: number): void {
    if (ms <= 0) this.delays.delete(method);
    else this.delays.set(method, ms);
  }

  /** How long to wait before answering a call of `method`. */
  delayFor(method: string): number {
    return this.delays.get(method) ?? this.delays.get("*") ?? 0;
  }

  /**
   * The forced answer for a call of `method` now, if any: an open outage window first, else the next of
   * `failNext`'s failures (which it uses up). A call during an outage uses up no failNext failure.
   */
  take(method: string, args: JsonObject = {}): ForcedAnswer | undefined {
    const now = Date.now();
    for (let i = this.outages.length - 1; i >= 0; i--) {
      if (this.outages[i]!.until <= now) this.outages.splice(i, 1);
    }
    const outage = this.outages.find((o) => o.methods.has(method) || o.methods.has("*"));
    if (outage !== undefined) return { error: outage.error, status: outage.status };
    const failures = this.forced.get(method) ?? [];
    const failure = failures.find((f) => f.remaining > 0 && (f.where === undefined || f.where(args)));
    if (failure === undefined) return undefined;
    failure.remaining -= 1;
    if (failure.remaining === 0)
      this.forced.set(
        method,
        failures.filter((f) => f !== failure),
      );
    return { error: failure.error, status: failure.status };
  }
}
