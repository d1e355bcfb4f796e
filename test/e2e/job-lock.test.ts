import { DelayedError, type Job, Queue, Worker } from "bullmq";
import type { Redis } from "ioredis";
import { expect, it } from "vitest";
import { holdingLock, stepJobLockOptions } from "../../src/queue/job-lock.ts";
import { createRedis } from "../../src/redis/redis-connection.ts";
import { QUEUE_PREFIX } from "../../src/store/keys.ts";
import { until } from "../../testbench/until.ts";
import { captureLog } from "../support/log-capture.ts";
import { useRedisServer } from "../support/redis-server.ts";

/**
 * A step job (it parks itself with moveToDelayed and runs again, as every swap does between its steps)
 * keeps its lock through a long step even when another slot of the same worker takes it again before the
 * run that parked it has ended. With BullMQ's own renewal, that parking run's end untracks the new run's
 * lock (worker.js processJob), the lock expires, and the job is called stalled while its process is well:
 * one CI run's takeover test failed so ("swap step stalled (its worker died)", the 20 s health step's 8 s
 * lock lost). Real Redis and a real BullMQ worker.
 */
let redisUrl: string;
let redis: Redis;
useRedisServer((r, server) => {
  redis = r;
  redisUrl = server.url;
});

const LOCK_MS = 1000;

interface Outcome {
  stalled: number;
  runs: number;
  completed: boolean;
}

/**
 * One job: its first run parks it, due at once; its second runs 3.5 locks long. The parking run's end
 * comes 300 ms late (BullMQ fetches its next job first: one Redis round trip, which a loaded machine
 * makes that long), so another slot has the job again by then: the window CI's load opened.
 */
async function parkThenRunLong(name: string, ownLock: boolean): Promise<Outcome> {
  const { log } = captureLog();
  const connection = createRedis({ REDIS_URL: redisUrl } as never, "worker");
  let runs = 0;
  const step = async (job: Job, token?: string) => {
    runs += 1;
    if (runs === 1) {
      await job.moveToDelayed(Date.now(), token);
      throw new DelayedError();
    }
    await new Promise((resolve) => setTimeout(resolve, 3.5 * LOCK_MS));
  };
  const worker = new Worker(
    name,
    ownLock ? (job, token) => holdingLock(job, token, LOCK_MS, log, () => step(job, token)) : step,
    {
      connection,
      prefix: QUEUE_PREFIX,
      concurrency: 4,
      stalledInterval: 250,
      ...(ownLock ? stepJobLockOptions(LOCK_MS) : { lockDuration: LOCK_MS }),
    },
  );
  const internals = worker as unknown as {
    handleFailed: (error: Error, ...rest: unknown[]) => Promise<unknown>;
  };
  expect(typeof internals.handleFailed, "BullMQ's Worker.handleFailed (the delay hooks there)").toBe(
    "function",
  );
  const handleFailed = internals.handleFailed.bind(worker);
  internals.handleFailed = async (error, ...rest) => {
    if (error.name === "DelayedError") await new Promise((resolve) => setTimeout(resolve, 300));
    return await handleFailed(error, ...rest);
  };
  let stalled = 0;
  worker.on("stalled", () => {
    stalled += 1;
  });
  worker.on("error", () => undefined);
  const queue = new Queue(name, { connection: redis, prefix: QUEUE_PREFIX });
  try {
    const job = await queue.add("step", {});
    let completed = false;
    await until(
      async () => {
        completed = (await job.getState()) === "completed";
        return completed || stalled > 0;
      },
      { what: "the job to complete or stall", timeoutMs: 15_000 },
    ).catch(() => undefined);
    return { stalled, runs, completed };
  } finally {
    await worker.close(true);
    await queue.close();
    connection.disconnect();
  }
}

it("BullMQ's own renewal loses a re-taken step job's lock (the fault this file guards against is real)", async () => {
  const outcome = await parkThenRunLong("lock-bullmq", false);
  expect(outcome.stalled).toBeGreaterThan(0);
}, 30_000);

it("holdingLock keeps it: the long run ends where it began, nothing stalled", async () => {
  const outcome = await parkThenRunLong("lock-own", true);
  expect(outcome).toEqual({ stalled: 0, runs: 2, completed: true });
}, 30_000);

it("says once, with its fix, when the lock is gone from under a run", async () => {
  const { log, lines } = captureLog<{ code?: string; job?: string; msg: string }>();
  const connection = createRedis({ REDIS_URL: redisUrl } as never, "worker");
  const name = "lock-gone";
  let finish: () => void = () => undefined;
  const running = new Promise<void>((resolve) => {
    finish = resolve;
  });
  let started = false;
  const worker = new Worker(
    name,
    (job, token) =>
      holdingLock(job, token, LOCK_MS, log, async () => {
        started = true;
        await running;
      }),
    { connection, prefix: QUEUE_PREFIX, skipStalledCheck: true, ...stepJobLockOptions(LOCK_MS) },
  );
  worker.on("error", () => undefined);
  const queue = new Queue(name, { connection: redis, prefix: QUEUE_PREFIX });
  try {
    const job = await queue.add("long", {});
    await until(async () => started, { what: "the job to start" });
    // what a lock that expired while the process was held up looks like to the next renewal
    await redis.del(`${QUEUE_PREFIX}:${name}:${job.id}:lock`);
    await until(async () => lines().some((l) => l.code === "JOB_LOCK_LOST"), {
      what: "JOB_LOCK_LOST in the log",
      timeoutMs: 5000,
    });
    await new Promise((resolve) => setTimeout(resolve, LOCK_MS));
    const lost = lines().filter((l) => l.code === "JOB_LOCK_LOST");
    expect(lost).toHaveLength(1);
    expect(lost[0]).toMatchObject({
      job: job.id,
      msg: expect.stringContaining("docs/operations.md (JOB_LOCK_LOST)"),
    });
  } finally {
    finish();
    await worker.close(true);
    await queue.close();
    connection.disconnect();
  }
}, 30_000);
