/** What a probe gives while the thing awaited has not happened yet. */
export type NotYet = undefined | null | false;

export interface UntilOptions {
  /** What is awaited, for the error on timeout: "the health wait", "the alert for crashy". */
  what: string;
  /** How long to wait before failing (default 20 s). */
  timeoutMs?: number;
  /** How long between two probes (default 50 ms). */
  intervalMs?: number;
}

/** What `until` throws when nothing came in time (a probe's own error is thrown as it is). */
export class UntilTimeout extends Error {}

/**
 * Polls `probe` until it gives a value (anything but `undefined`, `null` or `false`, so `0` and `""`
 * count) and returns that value; throws `timed out after <timeoutMs> ms waiting for <what>` when none
 * came in time. The probe runs at least once, and once more at the deadline. A probe that throws ends the
 * wait with its error: a probe that expects errors (Redis restarted on purpose) catches them itself.
 *
 * The one poller of the tests and the benchmarks: wait for the observable thing, never for a fixed time.
 */
export async function until<T>(
  probe: () => T | NotYet | Promise<T | NotYet>,
  options: UntilOptions,
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  const intervalMs = options.intervalMs ?? 50;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const last = Date.now() >= deadline;
    const value = await probe();
    if (value !== undefined && value !== null && value !== false) return value;
    if (last) throw new UntilTimeout(`timed out after ${timeoutMs} ms waiting for ${options.what}`);
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, Math.min(intervalMs, deadline - Date.now()))),
    );
  }
}
