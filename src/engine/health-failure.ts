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
