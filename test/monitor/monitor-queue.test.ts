import { type Job, Worker } from "bullmq";
import type { Redis } from "ioredis";
import { expect, it } from "vitest";
import { MONITOR_QUEUE, MonitorQueue, scheduledAt, spreadOffset } from "../../src/queue/monitor-queue.ts";
import { QUEUE_PREFIX } from "../../src/store/keys.ts";
import { until } from "../../testbench/until.ts";
import { useRedisServer } from "../support/redis-server.ts";

/**
 * The fleet's health checks are spread over the interval (each host at its own moment), not fired at
 * the same instant: the bench found 200 hosts checked at once every interval, 200 SSH commands in a burst.
 */
let redis: Redis;

useRedisServer(
  (client) => {
    redis = client;
  },
  { maxRetriesPerRequest: null },
);

it("gives each host's check its own moment in the interval", async () => {
  const queue = new MonitorQueue(redis);
  try {
    const hosts = Array.from({ length: 20 }, (_, i) => `gpu-${i}`);
    const everyMs = 10_000;
    const before = Date.now();
    await queue.reconcile(hosts, everyMs);
    const next = (await queue.queue.getJobSchedulers(0, -1, true))
      .map((s) => Number(s.next))
      .sort((a, b) => a - b);
    expect(next).toHaveLength(20);
    // every first check falls within one interval from now…
    expect(next[0]).toBeGreaterThanOrEqual(before);
    expect(next.at(-1)! - before).toBeLessThanOrEqual(everyMs + 1000);
    // …and no two hosts share a moment: they are an interval / hosts apart
    for (let i = 1; i < next.length; i++)
      expect(next[i]! - next[i - 1]!).toBeGreaterThanOrEqual(everyMs / 20 - 1);
  } finally {
    await queue.close();
  }
});

it("knows the moment each check was due: on the host's offset, and at most a moment before it ran", async () => {
  const queue = new MonitorQueue(redis);
  const ran: { due: number | undefined; at: number; host: string }[] = [];
  const worker = new Worker(
    MONITOR_QUEUE,
    async (job: Job<{ host: string }>) => {
      ran.push({ due: scheduledAt(job), at: Date.now(), host: job.data.host });
    },
    { connection: redis.duplicate(), prefix: QUEUE_PREFIX, concurrency: 4 },
  );
  try {
    const everyMs = 1000;
    await queue.reconcile(["gpu-0", "gpu-1"], everyMs);
    await until(async () => ran.length >= 6, { what: "three rounds of checks", timeoutMs: 20_000 });
    for (const { due, at, host } of ran) {
      expect(due, host).toBeDefined();
      // each host's checks fall on its own offset in the interval (spreadOffset: 1 and 501 ms)…
      const offset = spreadOffset(host === "gpu-0" ? 0 : 1, 2, everyMs);
      expect((due as number) % everyMs, host).toBe(offset);
      // …and never after they ran (timestamp + delay, read so before, was the previous check's start)
      expect(at, host).toBeGreaterThanOrEqual(due as number);
    }
    expect(scheduledAt({ id: "42" })).toBeUndefined();
  } finally {
    await worker.close();
    await queue.close();
  }
});
