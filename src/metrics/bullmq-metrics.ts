import { Counter, Gauge, Registry } from "prom-client";
import { FROM_REDIS } from "./read-deployment.ts";

/** A family of BullMQ's exporter as it wrote it. */
export interface ExportedFamily {
  name: string;
  help: string;
  type: string;
  samples: { labels: Record<string, string>; value: number }[];
}

/**
 * BullMQ's exporter (Queue.exportPrometheusMetrics) writes each queue's HELP and TYPE lines again, which
 * the text format forbids once several queues are exported: each queue's text is read back here, and
 * families that share a name become one, labels and values unchanged.
 */
export function parseBullmqMetrics(texts: readonly string[]): ExportedFamily[] {
  const families = new Map<string, ExportedFamily>();
  const family = (name: string) => {
    let f = families.get(name);
    if (f === undefined) {
      f = { name, help: "", type: "gauge", samples: [] };
      families.set(name, f);
    }
    return f;
  };
  for (const line of texts.flatMap((text) => text.split("\n"))) {
    const meta = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line);
    if (meta !== null) {
      const f = family(meta[2]!);
      if (meta[1] === "HELP") f.help = meta[3]!;
      else f.type = meta[3]!;
      continue;
    }
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (sample === null) continue;
    const labels: Record<string, string> = {};
    for (const m of (sample[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[m[1]!] = m[2]!.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
    }
    family(sample[1]!).samples.push({ labels, value: Number(sample[3]) });
  }
  return [...families.values()];
}

/**
 * A registry of this scrape's BullMQ families, each one prom-client Gauge or Counter holding what BullMQ
 * exported (its HELP, saying where it comes from). BullMQ writes only gauges and counters; a family of
 * another type would be left out rather than mislabelled.
 */
export function bullmqRegistry(texts: readonly string[]): Registry {
  const registry = new Registry();
  for (const family of parseBullmqMetrics(texts)) {
    const config = {
      name: family.name,
      help: `${family.help} (BullMQ's exporter; ${FROM_REDIS})`,
      labelNames: [...new Set(family.samples.flatMap((s) => Object.keys(s.labels)))],
      registers: [registry],
    };
    if (family.type === "counter") {
      const counter = new Counter(config);
      for (const s of family.samples) counter.inc(s.labels, s.value);
    } else if (family.type === "gauge") {
      const gauge = new Gauge(config);
      for (const s of family.samples) gauge.set(s.labels, s.value);
    }
  }
  return registry;
}
