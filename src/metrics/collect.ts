import type { Queue } from "bullmq";
import type { Redis } from "ioredis";
import type { HostHealthState } from "../store/incidents.ts";
import { Store } from "../store/store.ts";
import { readSwapTally } from "../store/swap-tally.ts";
import {
  type MetricFamily,
  type MetricType,
  type Registry,
  renderFamilies,
  type Sample,
} from "./registry.ts";
import { swapFamilies } from "./swap-families.ts";

export interface CollectDeps {
  /** This process's own counters (Slack calls). */
  registry: Registry;
  /** A fail-fast connection: a scrape while Redis is down answers at once, without the Redis families. */
  redis: Redis;
  /** The queues whose job counts BullMQ exports. */
  queues: readonly Queue[];
  /** The configured hosts (a zero is exported for each, so a host with no swap yet still shows). */
  hosts: readonly string[];
  /** How long the Redis reads of one scrape may take. */
  timeoutMs?: number;
}

const FROM_REDIS =
  "Read from Redis at scrape time: the whole deployment's value, the same on every modelswap process (aggregate with max, not sum).";

/**
 * One scrape: this process's counters, then what the deployment shares in Redis — swaps (the tally),
 * host health and alerts (the health monitor's state), the swap running on each host (its lock and
 * record), and BullMQ's own job counts per queue. When Redis cannot be read in time, the scrape still
 * answers, with `modelswap_redis_up 0` and without the Redis families.
 */
export async function collectMetrics(
  deps: CollectDeps,
): Promise<{ text: string; redisError: string | undefined }> {
  const own = deps.registry.collect();
  let shared: MetricFamily[] = [];
  let redisError: string | undefined;
  try {
    shared = await withTimeout(readShared(deps), deps.timeoutMs ?? 3000);
  } catch (error) {
    redisError = (error as Error).message;
  }
  const up = redisError === undefined ? 1 : 0;
  const redisUp: MetricFamily = {
    name: "modelswap_redis_up",
    help: "1 when this process could read the Redis families of this scrape, 0 when Redis did not answer in time (they are left out).",
    type: "gauge",
    samples: [{ labels: {}, value: up }],
  };
  return { text: renderFamilies([...own, redisUp, ...shared]), redisError };
}

async function readShared(deps: CollectDeps): Promise<MetricFamily[]> {
  const { redis, hosts } = deps;
  const store = new Store(redis);
  const [tally, health, active, queues] = await Promise.all([
    readSwapTally(redis),
    Promise.all(hosts.map(async (host) => [host, await store.incidents.state(host)] as const)),
    Promise.all(hosts.map(async (host) => [host, await activeStep(store, host)] as const)),
    Promise.all(deps.queues.map((q) => q.exportPrometheusMetrics())),
  ]);
  return [
    ...swapFamilies(tally, hosts),
    {
      name: "modelswap_swaps_in_progress",
      help: `1 for the step the host's running swap is at (resolve, preflight, prepare, switch, health, sanity, benchmark, finish, rollback); no sample for a host without one. ${FROM_REDIS}`,
      type: "gauge",
      samples: active.flatMap(([host, step]) =>
        step === undefined ? [] : [{ labels: { host, step }, value: 1 }],
      ),
    },
    ...healthFamilies(health, tally.pages, hosts),
    ...mergeFamilies(queues.flatMap(parseBullmqMetrics)),
  ];
}

/** The step of the swap that holds the host, if one does and it has not ended. */
async function activeStep(store: Store, host: string): Promise<string | undefined> {
  const holder = await store.locks.hostHolder(host);
  if (holder === undefined) return undefined;
  const record = await store.swaps.get(holder).catch(() => undefined);
  return record === undefined || record.outcome !== undefined ? undefined : record.step;
}

function healthFamilies(
  health: readonly (readonly [string, HostHealthState])[],
  pages: ReadonlyMap<string, number>,
  hosts: readonly string[],
): MetricFamily[] {
  const healthy: Sample[] = [];
  for (const [host, s] of health) {
    if (s.lastResult === "pass" || s.lastResult === "fail")
      healthy.push({ labels: { host }, value: s.lastResult === "pass" ? 1 : 0 });
  }
  const alerts: Sample[] = [];
  for (const host of hosts) {
    const s = health.find(([h]) => h === host)?.[1];
    alerts.push({ labels: { host, kind: "alert" }, value: s?.alertsPosted ?? 0 });
    alerts.push({ labels: { host, kind: "recovery" }, value: s?.recoveriesPosted ?? 0 });
    alerts.push({ labels: { host, kind: "page" }, value: pages.get(host) ?? 0 });
  }
  return [
    {
      name: "modelswap_host_healthy",
      help: `The health monitor's last check of the host's serving unit: 1 passed, 0 failed. No sample before the first check or while a swap is switching the host (its checks are suppressed; see modelswap_swaps_in_progress). ${FROM_REDIS}`,
      type: "gauge",
      samples: healthy,
    },
    {
      name: "modelswap_host_incident_open",
      help: `1 while the host has an open incident (it failed health.failureThreshold checks in a row and has not recovered; the channel got an alert), else 0. ${FROM_REDIS}`,
      type: "gauge",
      samples: health.map(([host, s]) => ({ labels: { host }, value: s.incident === undefined ? 0 : 1 })),
    },
    {
      name: "modelswap_host_consecutive_failures",
      help: `Failed health checks of the host in a row (0 after a pass). ${FROM_REDIS}`,
      type: "gauge",
      samples: health.map(([host, s]) => ({ labels: { host }, value: s.failures })),
    },
    {
      name: "modelswap_host_last_check_timestamp_seconds",
      help: `When the health monitor last checked the host (Unix time). ${FROM_REDIS}`,
      type: "gauge",
      samples: health.flatMap(([host, s]) =>
        s.lastCheck === undefined ? [] : [{ labels: { host }, value: s.lastCheck.getTime() / 1000 }],
      ),
    },
    {
      name: "modelswap_alerts_total",
      help: `Messages that told the channel about a host, by kind: alert (the monitor opened an incident), recovery (it closed one), page (a swap's rollback failed and <!channel> was told the host serves nothing). ${FROM_REDIS}`,
      type: "counter",
      samples: alerts,
    },
  ];
}

/**
 * BullMQ's exporter (Queue.exportPrometheusMetrics) writes each queue's HELP and TYPE lines again, which
 * the text format forbids once several queues are exported: its lines are read back here and merged
 * into one family per name, labels and values unchanged.
 */
export function parseBullmqMetrics(text: string): MetricFamily[] {
  const families = new Map<string, MetricFamily>();
  const family = (name: string) => {
    let f = families.get(name);
    if (f === undefined) {
      f = { name, help: "", type: "gauge", samples: [] };
      families.set(name, f);
    }
    return f;
  };
  for (const line of text.split("\n")) {
    const meta = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line);
    if (meta !== null) {
      const f = family(meta[2]!);
      if (meta[1] === "HELP") f.help = `${meta[3]!} (BullMQ's exporter; ${FROM_REDIS})`;
      else f.type = meta[3] as MetricType;
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

/** One family per name: the samples of families that share a name, in order. */
export function mergeFamilies(families: readonly MetricFamily[]): MetricFamily[] {
  const merged = new Map<string, MetricFamily>();
  for (const f of families) {
    const seen = merged.get(f.name);
    if (seen === undefined) merged.set(f.name, { ...f, samples: [...f.samples] });
    else seen.samples.push(...f.samples);
  }
  return [...merged.values()];
}

async function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`Redis did not answer within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
