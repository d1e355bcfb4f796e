import { Counter, Gauge, type Registry } from "prom-client";
import { LATENESS_BUCKETS } from "../store/incidents.ts";
import { type DeploymentState, FROM_REDIS } from "./read-deployment.ts";
import { bucketCounts, StoredHistogram } from "./stored-histogram.ts";

/**
 * The metrics of each configured host, filled at scrape time from `state()`: the step of its running
 * swap, the health monitor's last check, its incident, and the messages that told the channel about it.
 */
export function registerHostMetrics(registry: Registry, state: () => DeploymentState): void {
  const registers = [registry];
  new Gauge({
    name: "modelswap_swaps_in_progress",
    help: `1 for the step the host's running swap is at (resolve, preflight, prepare, switch, health, sanity, benchmark, finish, rollback); no sample for a host without one. ${FROM_REDIS}`,
    labelNames: ["host", "step"],
    registers,
    collect() {
      this.reset();
      for (const [host, step] of state().active) if (step !== undefined) this.set({ host, step }, 1);
    },
  });
  new Gauge({
    name: "modelswap_host_healthy",
    help: `The health monitor's last check of the host's serving unit: 1 passed, 0 failed. No sample before the first check or while a swap is switching the host (its checks are suppressed; see modelswap_swaps_in_progress). ${FROM_REDIS}`,
    labelNames: ["host"],
    registers,
    collect() {
      this.reset();
      for (const [host, s] of state().health)
        if (s.lastResult === "pass" || s.lastResult === "fail")
          this.set({ host }, s.lastResult === "pass" ? 1 : 0);
    },
  });
  new Gauge({
    name: "modelswap_host_incident_open",
    help: `1 while the host has an open incident (it failed health.failureThreshold checks in a row and has not recovered; the channel got an alert), else 0. ${FROM_REDIS}`,
    labelNames: ["host"],
    registers,
    collect() {
      this.reset();
      for (const [host, s] of state().health) this.set({ host }, s.incident === undefined ? 0 : 1);
    },
  });
  new Gauge({
    name: "modelswap_host_consecutive_failures",
    help: `Failed health checks of the host in a row (0 after a pass). ${FROM_REDIS}`,
    labelNames: ["host"],
    registers,
    collect() {
      this.reset();
      for (const [host, s] of state().health) this.set({ host }, s.failures);
    },
  });
  new Gauge({
    name: "modelswap_host_last_check_timestamp_seconds",
    help: `When the health monitor last checked the host (Unix time). ${FROM_REDIS}`,
    labelNames: ["host"],
    registers,
    collect() {
      this.reset();
      for (const [host, s] of state().health)
        if (s.lastCheck !== undefined) this.set({ host }, s.lastCheck.getTime() / 1000);
    },
  });
  new Counter({
    name: "modelswap_alerts_total",
    help: `Messages that told the channel about a host, by kind: alert (the monitor opened an incident), recovery (it closed one), page (a swap's rollback failed and <!channel> was told the host serves nothing). ${FROM_REDIS}`,
    labelNames: ["host", "kind"],
    registers,
    collect() {
      const { hosts, health, tally } = state();
      const byHost = new Map(health);
      this.reset();
      for (const host of hosts) {
        const s = byHost.get(host);
        this.inc({ host, kind: "alert" }, s?.alertsPosted ?? 0);
        this.inc({ host, kind: "recovery" }, s?.recoveriesPosted ?? 0);
        this.inc({ host, kind: "page" }, tally.pages.get(host) ?? 0);
      }
    },
  });
  new StoredHistogram(
    "modelswap_health_check_lateness_seconds",
    `How long after its scheduled moment each health check started, over the whole fleet and every worker: a monitor that keeps up stays in the first buckets; one that falls behind (too few workers, a slow Redis) shows here before any host goes unchecked for an interval. ${FROM_REDIS}`,
    LATENESS_BUCKETS,
    () => {
      const { counts, sumSeconds } = state().lateness;
      return [{ labels: {}, counts: bucketCounts(counts, LATENESS_BUCKETS), sum: sumSeconds }];
    },
    registry,
  );
}
