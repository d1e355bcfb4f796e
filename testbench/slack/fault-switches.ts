import type { ForcedFailure } from "./web-api.ts";

/**
 * The Web API's fault switches that are not rate limits (those are the RateLimiter's): answers forced to
 * fail (`failNext`) and slow answers (`setApiDelay`). The API server (api-server.ts) consults them on
 * every call.
 */
export class ApiFaults {
  /** The next calls of a method that fail, by method. */
  readonly forced = new Map<string, ForcedFailure>();
  /** Delay in ms before answering, by method ("*" for all). */
  readonly delays = new Map<string, number>();

  /** The next `count` calls of `method` answer `{ok:false, error}` (with HTTP `status`, default 200). */
  failNext(method: string, error: string, opts: { count?: number; status?: number } = {}): void {
    this.forced.set(method, { error, status: opts.status ?? 200, remaining: opts.count ?? 1 });
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
}
