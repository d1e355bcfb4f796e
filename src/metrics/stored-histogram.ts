import type { Metric, Registry } from "prom-client";

/** One series of a histogram counted elsewhere: its labels, the count per bucket (not cumulative), its sum. */
export interface StoredSeries {
  labels: Readonly<Record<string, string>>;
  /** `counts[i]` observations fell in `(buckets[i-1], buckets[i]]`; `counts[buckets.length]` above the last bound. */
  counts: readonly number[];
  sum: number;
}

interface Value {
  metricName: string;
  labels: Record<string, string | number>;
  value: number;
}

/**
 * A histogram whose observations were counted elsewhere (the swap tally in Redis, by whichever worker
 * ended the swap), exposed in a prom-client Registry. prom-client's own Histogram counts only what this
 * process observes and has no way to load bucket counts and a sum kept outside it; its Registry renders
 * any collector with the shape of its own metrics (name, help, type, and get() returning the samples,
 * `metricName` naming the `_bucket`/`_sum`/`_count` lines as its Histogram does), so this is one.
 * `series` is called at each scrape, like a prom-client collect() callback.
 */
export class StoredHistogram {
  readonly type = "histogram";
  readonly aggregator = "sum";

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly buckets: readonly number[],
    private readonly series: () => readonly StoredSeries[],
    registry: Registry,
  ) {
    // prom-client's types list only its own four classes; its Registry needs no more than the above
    registry.registerMetric(this as unknown as Metric);
  }

  /** Nothing is kept here (Registry.resetMetrics calls it). */
  reset(): void {}

  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Value[] }> {
    const values = this.series().flatMap((s) => histogramValues(this.name, this.buckets, s));
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

/** The cumulative `_bucket{le}` lines ending in `+Inf`, then `_sum` and `_count`. */
export function histogramValues(name: string, buckets: readonly number[], series: StoredSeries): Value[] {
  const values: Value[] = [];
  let cumulative = 0;
  buckets.forEach((le, i) => {
    cumulative += series.counts[i] ?? 0;
    values.push({ metricName: `${name}_bucket`, labels: { ...series.labels, le }, value: cumulative });
  });
  cumulative += series.counts[buckets.length] ?? 0;
  values.push({ metricName: `${name}_bucket`, labels: { ...series.labels, le: "+Inf" }, value: cumulative });
  values.push({ metricName: `${name}_sum`, labels: { ...series.labels }, value: series.sum });
  values.push({ metricName: `${name}_count`, labels: { ...series.labels }, value: cumulative });
  return values;
}

/**
 * Per-bucket counts stored by bound (`"5"`, `"+Inf"`) → a count per bound of `buckets` and one above the
 * last; a bound that is no longer one falls into the next bound up, so counts never go down.
 */
export function bucketCounts(stored: ReadonlyMap<string, number>, buckets: readonly number[]): number[] {
  const counts = new Array<number>(buckets.length + 1).fill(0);
  for (const [bound, count] of stored) {
    const value = bound === "+Inf" ? Number.POSITIVE_INFINITY : Number(bound);
    const i = buckets.findIndex((b) => value <= b);
    counts[i === -1 ? buckets.length : i]! += count;
  }
  return counts;
}
