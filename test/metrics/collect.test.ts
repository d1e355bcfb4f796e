import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { Queue } from "bullmq";
import type { Redis } from "ioredis";
import { Registry } from "prom-client";
import { afterAll, describe, expect, it } from "vitest";
import { newSwapId } from "../../src/grammar/swap-id.ts";
import { parseSwapRequest } from "../../src/grammar/swap-request.ts";
import { MetricsCollector } from "../../src/metrics/collect.ts";
import { SlackCallMetrics } from "../../src/metrics/slack-calls.ts";
import { QUEUE_PREFIX } from "../../src/store/keys.ts";
import { Store } from "../../src/store/store.ts";
import { newStages, type SwapRecord } from "../../src/swap/swap-record.ts";
import type { BenchRedis } from "../../testbench/redis.ts";
import { until } from "../../testbench/until.ts";
import { parseExposition, sampleValue } from "../support/prometheus-text.ts";
import { useRedisServer } from "../support/redis-server.ts";

/**
 * One /metrics scrape on a real redis-server, through prom-client, read back by the strict parser: every
 * metric docs/metrics.md documents is there with its type and labels; when Redis does not answer the
 * scrape still answers, with modelswap_redis_up 0 and without the Redis families.
 */
let server: BenchRedis;
let redis: Redis;
let queue: Queue;

useRedisServer(
  (client, started) => {
    redis = client;
    server = started;
    redis.on("error", () => undefined); // the second test stops the server on purpose
    queue = new Queue("swaps", { connection: redis, prefix: QUEUE_PREFIX });
  },
  { maxRetriesPerRequest: null },
);

afterAll(async () => {
  await queue?.close();
});

/** The metrics table of docs/metrics.md: name → type and labels. */
async function documented(): Promise<Map<string, { type: string; labels: string[] }>> {
  const doc = await readFile(join(import.meta.dirname, "../../docs/metrics.md"), "utf8");
  const rows = new Map<string, { type: string; labels: string[] }>();
  for (const m of doc.matchAll(
    /^\| (`[a-z_]+`(?:, `[a-z_]+`)*) \| (counter|gauge|histogram) \| ([^|]+) \|/gm,
  )) {
    const labels = m[3]!.includes("`") ? [...m[3]!.matchAll(/`([a-z_]+)`/g)].map((l) => l[1]!) : [];
    for (const name of m[1]!.matchAll(/`([a-z_]+)`/g)) rows.set(name[1]!, { type: m[2]!, labels });
  }
  return rows;
}

function finishedSwap(host: string): SwapRecord {
  const parsed = parseSwapRequest(["sim-org/open-llama-1B", "--host", host]);
  if (!parsed.ok) throw new Error(parsed.reason);
  const stages = newStages();
  stages.switch = { state: "done", startedAt: "2030-01-01T00:00:00Z", finishedAt: "2030-01-01T00:00:02Z" };
  return {
    id: newSwapId(),
    host,
    requester: "U1",
    channel: "C1",
    createdAt: "2030-01-01T00:00:00Z",
    request: parsed.request,
    step: "done",
    stages,
    tasks: {},
    outcome: "succeeded",
    downtimeSeconds: 12.5,
    finishedAt: "2030-01-01T00:00:30Z",
  };
}

describe("a /metrics scrape", () => {
  it("has every documented metric with its type and labels, in valid text format", async () => {
    const store = new Store(redis);
    await store.swaps.save(finishedSwap("gpu-1"));
    await store.incidents.record("gpu-1", { ok: false, detail: "connection refused" });
    await queue.add("swap", {});

    const registry = new Registry();
    const slack = new SlackCallMetrics(registry);
    slack.rateLimited("chat.postMessage", 2);
    slack.failed("reactions.add", "already_reacted");
    const collector = new MetricsCollector({
      registry,
      redis,
      queues: [queue],
      hosts: () => ["gpu-1", "gpu-2"],
    });
    const { text, redisError } = await collector.scrape();
    expect(redisError).toBeUndefined();
    const families = parseExposition(text);

    for (const [name, doc] of await documented()) {
      const family = families.get(name);
      expect(family, name).toBeDefined();
      expect(family!.type, name).toBe(doc.type);
      expect(family!.help, name).not.toBe("");
      for (const s of family!.samples) {
        const { le: _, ...labels } = s.labels;
        expect(Object.keys(labels).sort(), s.name).toEqual([...doc.labels].sort());
      }
    }
    // nothing undocumented (BullMQ may add families of its own: those are its exporter's)
    const mine = [...families.keys()].filter((n) => !n.startsWith("bullmq_"));
    expect(mine.sort()).toEqual(
      [...(await documented()).keys()].filter((n) => !n.startsWith("bullmq_")).sort(),
    );

    const value = (name: string, labels: Record<string, string> = {}) => sampleValue(families, name, labels);
    expect(value("modelswap_redis_up")).toBe(1);
    expect(value("modelswap_swaps_total", { host: "gpu-1", outcome: "succeeded" })).toBe(1);
    expect(value("modelswap_swaps_total", { host: "gpu-2", outcome: "failed" })).toBe(0);
    expect(value("modelswap_stage_duration_seconds_bucket", { stage: "switch", le: "5" })).toBe(1);
    expect(value("modelswap_stage_duration_seconds_sum", { stage: "switch" })).toBe(2);
    expect(value("modelswap_swap_downtime_seconds_sum", { host: "gpu-1", outcome: "succeeded" })).toBe(12.5);
    expect(value("modelswap_swap_last_downtime_seconds", { host: "gpu-1" })).toBe(12.5);
    expect(value("modelswap_host_healthy", { host: "gpu-1" })).toBe(0);
    expect(value("modelswap_host_healthy", { host: "gpu-2" })).toBeUndefined();
    expect(value("modelswap_host_consecutive_failures", { host: "gpu-1" })).toBe(1);
    expect(value("modelswap_alerts_total", { host: "gpu-2", kind: "page" })).toBe(0);
    expect(value("bullmq_job_count", { queue: "swaps", state: "waiting" })).toBe(1);
    expect(value("modelswap_slack_rate_limit_wait_seconds_total", { method: "chat.postMessage" })).toBe(2);
    expect(text.match(/^# TYPE bullmq_job_count /gm)).toHaveLength(1);

    // scrapes at once each read the deployment and render all of it
    const [a, b] = await Promise.all([collector.scrape(), collector.scrape()]);
    expect(a.text).toBe(text);
    expect(b.text).toBe(text);
  });

  it("answers without the Redis families, and modelswap_redis_up 0, when Redis does not answer", async () => {
    const registry = new Registry();
    new SlackCallMetrics(registry).ok("chat.postMessage");
    const collector = new MetricsCollector({
      registry,
      redis,
      queues: [queue],
      hosts: () => ["gpu-1"],
      timeoutMs: 300,
    });
    await server.stop();
    try {
      const started = Date.now();
      const { text, redisError } = await collector.scrape();
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(redisError).toMatch(/did not answer within 300 ms/);
      const families = parseExposition(text);
      expect(sampleValue(families, "modelswap_redis_up")).toBe(0);
      expect(
        sampleValue(families, "modelswap_slack_api_calls_total", {
          method: "chat.postMessage",
          result: "ok",
        }),
      ).toBe(1);
      expect(
        [...families.keys()].filter((n) => !n.startsWith("modelswap_slack_") && n !== "modelswap_redis_up"),
      ).toEqual([]);
    } finally {
      await server.start();
    }
    // once the client has reconnected (ioredis retries with a backoff), the Redis families are back
    await until(() => redis.status === "ready", { what: "the client to reconnect to the restarted Redis" });
    const { redisError } = await collector.scrape();
    expect(redisError).toBeUndefined();
  });
});
