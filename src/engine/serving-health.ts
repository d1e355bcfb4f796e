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
  const path = SERVING_HEALTH_PATH;
  if (status !== null) return `${path} answered HTTP ${status}`;
  if (curlExit === 7) return `${path}: connection refused (nothing listens on the serving port)`;
  if (curlExit === 28) return `${path} timed out after ${timeoutSeconds} s`;
  if (curlExit === 127) return `${path} could not be asked: curl is not installed on the host`;
  if (curlExit === 52) return `${path}: the server closed the connection without answering`;
  return `${path} did not answer (curl exit ${curlExit ?? "unknown"})`;
}
