import type { Redis } from "ioredis";
import { expect, it } from "vitest";
import { MonitorQueue } from "../../src/queue/monitor-queue.ts";
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
