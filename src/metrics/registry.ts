/**
 * A small Prometheus registry and the text exposition format 0.0.4
 * (https://prometheus.io/docs/instrumenting/exposition_formats/). Most of modelswap's metrics are read
 * from Redis at scrape time (several processes share it) and only a few counters live in process
 * memory, so families rendered from plain data plus an in-memory counter are all it takes: no
 * prom-client, whose global registry and default process metrics we would not use.
 */

export type MetricType = "counter" | "gauge" | "histogram";
export type Labels = Readonly<Record<string, string>>;

/** One line of a family: `name{labels} value` (a histogram's lines carry `_bucket`, `_sum`, `_count`). */
export interface Sample {
  suffix?: "_bucket" | "_sum" | "_count";
  labels: Labels;
  value: number;
}

/** A metric family as it is exposed: one `# HELP`, one `# TYPE`, then its samples together. */
export interface MetricFamily {
  name: string;
  help: string;
  type: MetricType;
  samples: Sample[];
}

/** The content type Prometheus expects for the text format. */
export const EXPOSITION_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** From a second to two hours: stage durations (an approval may wait an hour) and downtimes alike. */
export const DURATION_BUCKETS: readonly number[] = [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200];

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** `\` `"` and newlines are the only characters a label value must escape. */
export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** HELP text escapes only `\` and newlines. */
export function escapeHelp(text: string): string {
  return text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

/** Go's float formatting as Prometheus reads it: `+Inf`, `-Inf`, `NaN`, otherwise the shortest form. */
export function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Number.POSITIVE_INFINITY) return "+Inf";
  if (value === Number.NEGATIVE_INFINITY) return "-Inf";
  return String(value);
}

function formatLabels(labels: Labels): string {
  const pairs = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabelValue(v)}"`);
  return pairs.length === 0 ? "" : `{${pairs.join(",")}}`;
}

/** Renders families in the text format; families sharing a name must have been merged before. */
export function renderFamilies(families: readonly MetricFamily[]): string {
  const lines: string[] = [];
  for (const family of families) {
    lines.push(`# HELP ${family.name} ${escapeHelp(family.help)}`);
    lines.push(`# TYPE ${family.name} ${family.type}`);
    for (const s of family.samples) {
      lines.push(`${family.name}${s.suffix ?? ""}${formatLabels(s.labels)} ${formatValue(s.value)}`);
    }
  }
  return lines.length === 0 ? "" : `${lines.join("\n")}\n`;
}

/**
 * A histogram's samples from per-bucket counts (not cumulative: `counts[i]` observations fell in
 * `(buckets[i-1], buckets[i]]`, `counts[buckets.length]` above the last bound): the cumulative
 * `_bucket{le}` lines, `+Inf`, `_sum` and `_count`.
 */
export function histogramSamples(
  labels: Labels,
  buckets: readonly number[],
  counts: readonly number[],
  sum: number,
): Sample[] {
  const samples: Sample[] = [];
  let cumulative = 0;
  buckets.forEach((le, i) => {
    cumulative += counts[i] ?? 0;
    samples.push({ suffix: "_bucket", labels: { ...labels, le: formatValue(le) }, value: cumulative });
  });
  cumulative += counts[buckets.length] ?? 0;
  samples.push({ suffix: "_bucket", labels: { ...labels, le: "+Inf" }, value: cumulative });
  samples.push({ suffix: "_sum", labels, value: sum });
  samples.push({ suffix: "_count", labels, value: cumulative });
  return samples;
}

function checkNames(name: string, labelNames: readonly string[]): void {
  if (!METRIC_NAME.test(name)) throw new Error(`not a Prometheus metric name: ${name}`);
  for (const label of labelNames) {
    if (!LABEL_NAME.test(label) || label.startsWith("__") || label === "le")
      throw new Error(`not a usable label name on ${name}: ${label}`);
  }
}

/** Labels in the declared order, so one series is one key whatever order the caller wrote them in. */
function seriesKey(labelNames: readonly string[], labels: Labels, metric: string): string {
  for (const given of Object.keys(labels)) {
    if (!labelNames.includes(given)) throw new Error(`${metric} has no label ${given}`);
  }
  return JSON.stringify(labelNames.map((l) => labels[l] ?? ""));
}

function labelsOf(labelNames: readonly string[], key: string): Labels {
  const values = JSON.parse(key) as string[];
  return Object.fromEntries(labelNames.map((l, i) => [l, values[i] ?? ""]));
}

abstract class Metric {
  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
  ) {
    checkNames(name, labelNames);
  }
  abstract collect(): MetricFamily;
}

export class Counter extends Metric {
  private readonly values = new Map<string, number>();

  inc(labels: Labels = {}, by = 1): void {
    if (!(by >= 0)) throw new Error(`${this.name}: a counter only goes up (got ${by})`);
    const key = seriesKey(this.labelNames, labels, this.name);
    this.values.set(key, (this.values.get(key) ?? 0) + by);
  }

  get(labels: Labels = {}): number {
    return this.values.get(seriesKey(this.labelNames, labels, this.name)) ?? 0;
  }

  collect(): MetricFamily {
    return {
      name: this.name,
      help: this.help,
      type: "counter",
      samples: [...this.values].map(([key, value]) => ({ labels: labelsOf(this.labelNames, key), value })),
    };
  }
}

/** The metrics this process keeps in memory (per process: Prometheus sums them over instances). */
export class Registry {
  private readonly metrics = new Map<string, Metric>();

  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    return this.add(new Counter(name, help, labelNames));
  }

  collect(): MetricFamily[] {
    return [...this.metrics.values()].map((m) => m.collect());
  }

  private add<M extends Metric>(metric: M): M {
    if (this.metrics.has(metric.name)) throw new Error(`metric ${metric.name} is registered twice`);
    this.metrics.set(metric.name, metric);
    return metric;
  }
}
