import { Counter, Gauge, type Registry } from "prom-client";
import { DURATION_BUCKETS } from "../store/duration-buckets.ts";
import { STAGES, SWAP_OUTCOMES } from "../swap/swap-record.ts";
import { type DeploymentState, FROM_REDIS } from "./read-deployment.ts";
import { bucketCounts, StoredHistogram } from "./stored-histogram.ts";

/**
 * The swap metrics from the tally, each filled at scrape time from `state()`: swaps by outcome (a zero
 * for every configured host and outcome, so rate() works from the first swap), stage durations and
 * downtimes as histograms, the last downtime per host.
 */
export function registerSwapMetrics(registry: Registry, state: () => DeploymentState): void {
  new Counter({
    name: "modelswap_swaps_total",
    help: `Swaps that ended, by outcome (succeeded, rolled_back, failed, rejected, expired, cancelled, planned = dry run) and host; counted once when the outcome is saved. ${FROM_REDIS}`,
    labelNames: ["outcome", "host"],
    registers: [registry],
    collect() {
      const { tally, hosts } = state();
      this.reset();
      for (const host of hosts) for (const outcome of SWAP_OUTCOMES) this.inc({ outcome, host }, 0);
      for (const s of tally.swaps) this.inc({ outcome: s.outcome, host: s.host }, s.count);
    },
  });
  new StoredHistogram(
    "modelswap_stage_duration_seconds",
    `How long each pipeline stage ran (done or failed) in the swaps that ended, from its start to its end, whichever workers ran it; approval is the wait for a decision. ${FROM_REDIS}`,
    DURATION_BUCKETS,
    () =>
      STAGES.map((stage) => {
        const series = state().tally.stages.get(stage);
        return {
          labels: { stage },
          counts: bucketCounts(series?.counts ?? new Map(), DURATION_BUCKETS),
          sum: series?.sum ?? 0,
        };
      }),
    registry,
  );
  new StoredHistogram(
    "modelswap_swap_downtime_seconds",
    `The serving downtime of each swap that stopped the old service, as its card says: old unit stopped to a healthy service (the new unit, or the old one after a rollback); to the end of the swap when none became healthy. ${FROM_REDIS}`,
    DURATION_BUCKETS,
    () =>
      [...state().tally.downtime.values()].map((s) => ({
        labels: { host: s.host, outcome: s.outcome },
        counts: bucketCounts(s.counts, DURATION_BUCKETS),
        sum: s.sum,
      })),
    registry,
  );
  new Gauge({
    name: "modelswap_swap_last_downtime_seconds",
    help: `The downtime of the last swap on the host that stopped its service (see modelswap_swap_downtime_seconds). ${FROM_REDIS}`,
    labelNames: ["host"],
    registers: [registry],
    collect() {
      this.reset();
      for (const [host, value] of state().tally.downtimeLast) this.set({ host }, value);
    },
  });
}
