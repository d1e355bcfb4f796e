import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RedisClient } from "../../src/redis/redis-client.ts";
import { createRedis } from "../../src/redis/redis-connection.ts";
import { RedisReachability } from "../../src/redis/redis-reachability.ts";
import { QUEUE_PREFIX } from "../../src/store/keys.ts";
import { type BenchRedis, startRedis } from "../../testbench/redis.ts";
import { until } from "../../testbench/until.ts";
import { captureLog } from "../support/log-capture.ts";

/**
 * RedisReachability against a real redis-server that goes away and comes back, fed by a real ioredis
 * connection and the 'error' events of a real BullMQ worker on it, as the process wires them.
 */
let dir: string;
let server: BenchRedis;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "modelswap-reachability-"));
  server = await startRedis(dir);
});

afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

interface Line {
  level: number;
  code?: string;
  msg: string;
  errors?: number;
  err?: string;
}

async function connected(): Promise<{
  redis: RedisClient;
  worker: Worker;
  reachability: RedisReachability;
  lines: () => Line[];
}> {
  const { log, lines } = captureLog<Line>();
  const redis = createRedis({ REDIS_URL: server.url }, "worker");
  const reachability = new RedisReachability(log, { summaryEveryMs: 1000 }).watch(redis, "worker connection");
  const worker = new Worker(`reachability-${Date.now()}`, async () => undefined, {
    connection: redis,
    prefix: QUEUE_PREFIX,
  });
  worker.on("error", (error) => reachability.error("test worker", error));
  await until(async () => redis.status === "ready", { what: "the connection to be ready" });
  return { redis, worker, reachability, lines };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("RedisReachability", () => {
  it("tells an outage once, a summary per interval while it lasts, and once when Redis is back", async () => {
    const { redis, worker, reachability, lines } = await connected();
    try {
      await server.stop();
      await sleep(3500);
      const down = lines().filter((l) => l.level >= 40);
      expect(down[0]).toMatchObject({ code: "REDIS_UNREACHABLE" });
      expect(down[0]?.err).toMatch(/ECONNREFUSED/);
      const summaries = down.filter((l) => l.code === "REDIS_STILL_UNREACHABLE");
      // one a second for 3.5 s: 2 or 3, each with the count of errors so far
      expect(summaries.length).toBeGreaterThanOrEqual(2);
      expect(summaries.length).toBeLessThanOrEqual(3);
      expect(down).toHaveLength(1 + summaries.length);
      expect(summaries.at(-1)?.errors).toBeGreaterThan(1);
      await server.start();
      await until(async () => lines().some((l) => l.code === "REDIS_REACHABLE"), { what: "the back line" });
      const back = lines().filter((l) => l.code === "REDIS_REACHABLE");
      expect(back).toHaveLength(1);
      expect(back[0]?.level).toBe(30);
      const count = lines().length;
      await sleep(2500);
      // no summaries once back
      expect(
        lines()
          .slice(count)
          .filter((l) => l.level >= 40),
      ).toEqual([]);
    } finally {
      reachability.stop();
      await worker.close();
      redis.disconnect();
    }
  }, 30_000);

  it("a worker's own error while Redis answers is logged as it is, every time", async () => {
    const { redis, worker, reachability, lines } = await connected();
    try {
      reachability.error("test worker", new Error("Missing lock for job 7. moveToFinished"));
      reachability.error("test worker", new Error("Missing lock for job 8. moveToFinished"));
      await sleep(50);
      const warned = lines().filter((l) => l.level >= 40);
      expect(warned.map((l) => [l.msg, l.err])).toEqual([
        ["test worker error", "Missing lock for job 7. moveToFinished"],
        ["test worker error", "Missing lock for job 8. moveToFinished"],
      ]);
    } finally {
      reachability.stop();
      await worker.close();
      redis.disconnect();
    }
  });

  it("says REDIS_CONNECTION_ENDED when a connection ends for good while the process runs, and nothing once it stops", async () => {
    const { redis, worker, reachability, lines } = await connected();
    await worker.close();
    redis.disconnect(); // ended, as ioredis ends a connection it has given up on: nothing reconnects it
    await until(async () => lines().some((l) => l.code === "REDIS_CONNECTION_ENDED"), {
      what: "the REDIS_CONNECTION_ENDED line",
    });
    const ended = lines().filter((l) => l.code === "REDIS_CONNECTION_ENDED");
    expect(ended).toHaveLength(1);
    expect(ended[0]?.level).toBe(50);
    expect(ended[0]?.msg).toMatch(
      /^the worker connection to Redis ended and will not reconnect.*Fix: restart it/,
    );

    const second = await connected();
    second.reachability.stop();
    await second.worker.close();
    second.redis.disconnect();
    await sleep(200);
    expect(second.lines().filter((l) => l.code === "REDIS_CONNECTION_ENDED")).toEqual([]);
    reachability.stop();
  });
});
