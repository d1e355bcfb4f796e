import type { HostHealthState } from "../store/incidents.ts";

/**
 * A host's health as the health monitor's last check left it (src/store/incidents.ts), in the words an
 * operator reads: the alert's incident decides `down` and `recovering`, so a page shows a host down
 * exactly while the channel has an open alert for it.
 */
export type MonitorVerdict =
  /** The last check passed, recently, and no incident is open. */
  | "healthy"
  /** An incident is open (the channel was alerted) and checks fail. */
  | "down"
  /** An incident is open and the last check passed: not yet the passes in a row that close it. */
  | "recovering"
  /** The last checks failed, fewer than the threshold that opens an incident. */
  | "failing"
  /** A swap is switching the host: its checks do not count until the swap's outcome. */
  | "switching"
  /** The last check (passed or failed) is older than the monitor's interval allows: nothing checks it now. */
  | "stale"
  /** Never checked (a host just added, or no worker running). */
  | "unchecked";

export interface MonitorView {
  verdict: MonitorVerdict;
  /** When the last check ran. */
  checkedAt?: Date;
  /** What the last check saw ("healthy", "`x.service` is failed", …), as the monitor wrote it. */
  detail?: string;
  /** For an open incident: since when the host has been down (its first failed check). */
  since?: Date;
  /** For `failing`: consecutive failed checks so far. */
  failures?: number;
}

/**
 * How old a check may be and still stand for the host now: two of the monitor's intervals and one
 * check's time limit, so one late or lost check does not make a host stale.
 */
export function monitorFreshMs(health: { intervalSeconds: number; checkTimeoutSeconds: number }): number {
  return (2 * health.intervalSeconds + health.checkTimeoutSeconds) * 1000;
}

/** The verdict of a host's health state at `now` (ms), checks older than `freshMs` counting as stale. */
export function monitorView(health: HostHealthState, now: number, freshMs: number): MonitorView {
  const { lastCheck, lastDetail, incident } = health;
  if (lastCheck === undefined) return { verdict: "unchecked" };
  const seen = { checkedAt: lastCheck, ...(lastDetail === undefined ? {} : { detail: lastDetail }) };
  if (incident !== undefined)
    return {
      verdict: health.lastResult === "pass" ? "recovering" : "down",
      ...seen,
      since: incident.since,
      ...(health.lastResult === "pass" ? {} : { detail: incident.lastFailure || lastDetail || "" }),
    };
  if (now - lastCheck.getTime() > freshMs) return { verdict: "stale", ...seen };
  if (health.lastResult === "suppressed") return { verdict: "switching", ...seen };
  if (health.lastResult === "fail") return { verdict: "failing", ...seen, failures: health.failures };
  return { verdict: "healthy", ...seen };
}
