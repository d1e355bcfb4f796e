import { Queue, Worker } from "bullmq";
import type { Redis } from "ioredis";
import { afterAll, expect, it } from "vitest";
import { checkBotHealth } from "../../src/http/health.ts";
import { InFlight } from "../../src/queue/in-flight.ts";
import { lookForStalls, WorkerStallWatch } from "../../src/queue/worker-stall.ts";
import { createRedis } from "../../src/redis/redis-connection.ts";
import { QUEUE_PREFIX } from "../../src/store/keys.ts";
import { startTcpHold, type TcpHold } from "../../testbench/tcp-hold.ts";
import { until } from "../../testbench/until.ts";
import { captureLog } from "../support/log-capture.ts";
import { useRedisServer } from "../support/redis-server.ts";

/**
 * A BullMQ worker that still says it runs but takes no jobs while they wait is told: WORKER_STALLED in the
 * log once, /healthz 503 naming it, and "takes jobs again" once it does. The worker's connection goes
 * through a relay that holds every byte (testbench/tcp-hold.ts), so its loop waits on Redis for ever as a
 * wedged one does, while the test and the watch reach Redis directly.
 */
let redis: Redis;
let redisUrl: string;
let relay: TcpHold;
useRedisServer(async (r, server) => {
  redis = r;
  redisUrl = server.url;
  relay = await startTcpHold(server.port);
});
afterAll(async () => {
  await relay?.close();
});

interface Line {
  level: number;
  code?: string;
  worker?: string;
  waiting?: number;
  msg: string;
}

it("a worker that takes no jobs while they wait is logged once and fails /healthz until it takes one", async () => {
  const { log, lines } = captureLog<Line>();
  const name = "stall-test";
  const inFlight = new InFlight();
  const connection = createRedis({ REDIS_URL: `redis://127.0.0.1:${relay.port}` } as never, "worker");
  connection.on("error", () => undefined);
  const done: string[] = [];
  const worker = new Worker(
    name,
    inFlight.track(name, async (job: { name: string }) => {
      done.push(job.name);
    }),
    { connection, prefix: QUEUE_PREFIX, concurrency: 2 },
  );
  worker.on("error", () => undefined);
  const queue = new Queue(name, { connection: redis, prefix: QUEUE_PREFIX });
  const watch = new WorkerStallWatch({ log, inFlight, now: () => Date.now(), afterMs: 2000 });
  const stop = lookForStalls(watch, [worker], redis, 250);
  try {
    await queue.add("first", {});
    await until(async () => done.includes("first"), { what: "the first job to run", timeoutMs: 10_000 });

    relay.hold();
    for (const n of ["a", "b", "c"]) await queue.add(n, {});
    await until(async () => lines().some((l) => l.code === "WORKER_STALLED"), {
      what: "WORKER_STALLED in the log",
      timeoutMs: 20_000,
      intervalMs: 100,
    });
    const stalled = lines().filter((l) => l.code === "WORKER_STALLED");
    expect(stalled).toHaveLength(1);
    expect(stalled[0]).toMatchObject({ level: 50, worker: name, waiting: 3 });
    expect(stalled[0]?.msg).toMatch(
      /started no job for [\d.]+ (?:s|min|h|d)(?: \d+ (?:s|min|h))? while 3 wait .*Fix: restart this process/,
    );
    expect(done).toEqual(["first"]);

    const health = await checkBotHealth(redis, [worker], { stalled: (w) => watch.stalled(w) });
    expect(health.ok).toBe(false);
    expect(health.workers).toEqual({ [name]: "stalled" });
    expect(health.problems?.[0]).toMatch(
      /^the stall-test worker has started no job for [\d.]+ (?:s|min|h|d)(?: \d+ (?:s|min|h))? while 3 wait: restart this process$/,
    );
    // told once per episode, however long it lasts
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(lines().filter((l) => l.code === "WORKER_STALLED")).toHaveLength(1);

    relay.release();
    await until(async () => done.length === 4, { what: "the waiting jobs to run", timeoutMs: 30_000 });
    await until(async () => lines().some((l) => /takes jobs again/.test(l.msg)), {
      what: "the watch to say the worker takes jobs again",
      timeoutMs: 10_000,
    });
    expect(await checkBotHealth(redis, [worker], { stalled: (w) => watch.stalled(w) })).toMatchObject({
      ok: true,
      workers: { [name]: "running" },
    });
  } finally {
    relay.release();
    await stop();
    await worker.close();
    await queue.close();
    connection.disconnect();
  }
}, 90_000);

it("a worker whose every slot is busy is not stalled, however many jobs wait", async () => {
  const { log, lines } = captureLog<Line>();
  const name = "busy-test";
  const inFlight = new InFlight();
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const connection = createRedis({ REDIS_URL: redisUrl } as never, "worker");
  const worker = new Worker(
    name,
    inFlight.track(name, async () => held),
    { connection, prefix: QUEUE_PREFIX, concurrency: 1 },
  );
  const queue = new Queue(name, { connection: redis, prefix: QUEUE_PREFIX });
  const watch = new WorkerStallWatch({ log, inFlight, now: () => Date.now(), afterMs: 500 });
  const stop = lookForStalls(watch, [worker], redis, 100);
  try {
    for (const n of ["long", "next", "after"]) await queue.add(n, {});
    await until(async () => inFlight.of(name).running === 1, { what: "the long job to start" });
    expect(lines().filter((l) => JSON.stringify(l).includes("WORKER_STALLED"))).toEqual([]);
    expect(lines().filter((l) => l.code === "WORKER_STALLED")).toEqual([]);
    expect(watch.stalled(name)).toBeUndefined();
  } finally {
    release();
    await stop();
    await worker.close();
    await queue.close();
    connection.disconnect();
  }
}, 30_000);
