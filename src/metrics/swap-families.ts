import type { SwapTally } from "../store/swap-tally.ts";
import { STAGES, SWAP_OUTCOMES } from "../swap/swap-record.ts";
import { DURATION_BUCKETS, histogramSamples, type MetricFamily, type Sample } from "./registry.ts";

/**
 * Per-bucket counts stored by bound → the registry's per-bucket array for today's bounds (a bound that
 * is no longer one falls into the next bound up, so counts never go down).
 */
function bucketCounts(stored: Map<string, number>): number[] {
  const counts = new Array<number>(DURATION_BUCKETS.length + 1).fill(0);
  for (const [bound, count] of stored) {
    const value = bound === "+Inf" ? Number.POSITIVE_INFINITY : Number(bound);
    const i = DURATION_BUCKETS.findIndex((b) => value <= b);
    counts[i === -1 ? DURATION_BUCKETS.length : i]! += count;
  }
  return counts;
}

const FROM_REDIS =
  "Read from Redis at scrape time: the whole deployment's value, the same on every modelswap process (aggregate with max, not sum).";

/** The swap families, with a zero for every configured host and outcome so rate() works from the first swap. */
export function swapFamilies(tally: SwapTally, hosts: readonly string[]): MetricFamily[] {
  const swaps = new Map<string, Sample>();
  for (const host of hosts)
    for (const outcome of SWAP_OUTCOMES)
      swaps.set(JSON.stringify([host, outcome]), { labels: { outcome, host }, value: 0 });
  for (const s of tally.swaps)
    swaps.set(JSON.stringify([s.host, s.outcome]), {
      labels: { outcome: s.outcome, host: s.host },
      value: s.count,
    });
  const stageSamples = STAGES.flatMap((stage) => {
    const series = tally.stages.get(stage) ?? { counts: new Map<string, number>(), sum: 0 };
    return histogramSamples({ stage }, DURATION_BUCKETS, bucketCounts(series.counts), series.sum);
  });
  return [
    {
      name: "modelswap_swaps_total",
      help: `Swaps that ended, by outcome (succeeded, rolled_back, failed, rejected, expired, cancelled, planned = dry run) and host; counted once when the outcome is saved. ${FROM_REDIS}`,
      type: "counter",
      samples: [...swaps.values()],
    },
    {
      name: "modelswap_stage_duration_seconds",
      help: `How long each pipeline stage ran (done or failed) in the swaps that ended, from its start to its end, whichever workers ran it; approval is the wait for a decision. ${FROM_REDIS}`,
      type: "histogram",
      samples: stageSamples,
    },
    {
      name: "modelswap_swap_downtime_seconds",
      help: `The serving downtime of each swap that stopped the old service, as its card says: old unit stopped to a healthy service (the new unit, or the old one after a rollback); to the end of the swap when none became healthy. ${FROM_REDIS}`,
      type: "histogram",
      samples: [...tally.downtime.values()].flatMap((s) =>
        histogramSamples(
          { host: s.host, outcome: s.outcome },
          DURATION_BUCKETS,
          bucketCounts(s.counts),
          s.sum,
        ),
      ),
    },
    {
      name: "modelswap_swap_last_downtime_seconds",
      help: `The downtime of the last swap on the host that stopped its service (see modelswap_swap_downtime_seconds). ${FROM_REDIS}`,
      type: "gauge",
      samples: [...tally.downtimeLast].map(([host, value]) => ({ labels: { host }, value })),
    },
  ];
}
