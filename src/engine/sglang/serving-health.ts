import { healthFailureOf } from "../health-failure.ts";

/**
 * How modelswap judges whether an engine serves: `GET /health_generate`, which SGLang answers 200 only
 * once a one-token generation came back (python/sglang/srt/entrypoints/http_server.py, `health_generate`;
 * in older releases `/health` answered 200 without generating, so only this path means the same on every
 * version). The health monitor, `/llm status` and the swap's health gate all ask this path, so they
 * never disagree about a host.
 */
export const SERVING_HEALTH_PATH = "/health_generate";

/** The failing health answer, for people, from curl's HTTP status or its exit code. */
export function servingHealthFailure(
  status: number | null,
  curlExit: number | null,
  timeoutSeconds: number,
): string {
  return healthFailureOf(SERVING_HEALTH_PATH, status, curlExit, timeoutSeconds);
}
