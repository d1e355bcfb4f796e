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

/** A health probe's failure, for people, named by what it asks (`label`): any engine's wording. */
export function healthFailureOf(
  label: string,
  status: number | null,
  curlExit: number | null,
  timeoutSeconds: number,
): string {
  if (status !== null) return `${label} answered HTTP ${status}`;
  if (curlExit === 7) return `${label}: connection refused (nothing listens on the serving port)`;
  if (curlExit === 28) return `${label} timed out after ${timeoutSeconds} s`;
  if (curlExit === 127) return `${label} could not be asked: curl is not installed on the host`;
  if (curlExit === 52) return `${label}: the server closed the connection without answering`;
  return `${label} did not answer (curl exit ${curlExit ?? "unknown"})`;
}
