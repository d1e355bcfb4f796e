import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Bench, CHANNEL, QUICK_BENCH, startBench, USERS } from "../../testbench/bench.ts";
import { makeModel } from "../../testbench/hub/index.ts";
import { type BenchSentinel, startSentinel } from "../../testbench/redis-sentinel.ts";
import { SwapDriver } from "../../testbench/swap-driver.ts";

/**
 * Redis behind Sentinel: a real sentinel (redis-server --sentinel) monitors the bench's redis-server,
 * both password-protected, and the bot is given only REDIS_SENTINELS, REDIS_SENTINEL_MASTER and the two
 * passwords (no REDIS_URL). A status command and a whole swap go through it.
 */
const LLAMA = "sim-org/open-llama-1B";
const HOST = "gpu-1";
const redisPassword = randomBytes(12).toString("hex");
const sentinelPassword = randomBytes(12).toString("hex");
let bench: Bench;
let sentinel: BenchSentinel;
let redis: Redis;
let swaps: SwapDriver;

/** Connections the sentinel has accepted so far (the bot's included). */
async function sentinelConnections(): Promise<number> {
  const client = new Redis({ host: "127.0.0.1", port: sentinel.port, password: sentinelPassword });
  try {
    return Number(/total_connections_received:(\d+)/.exec(await client.info("stats"))?.[1]);
  } finally {
    client.disconnect();
  }
}

beforeAll(async () => {
  bench = await startBench({
    ...QUICK_BENCH,
    swaps: { pollSeconds: 0.2, cardUpdateSeconds: 1, healthTimeoutSeconds: 8 },
    hosts: [{ name: HOST, gpus: "h200-1gpu", serving: { preset: "llama-bf16-small" } }],
  });
  bench.hub.addModel(makeModel("llama-bf16-small", { id: LLAMA, gated: false }));
  // the bench's Redis gets a password: only a client that knows it (through the sentinel) gets in
  const admin = new Redis(bench.redis.url);
  await admin.config("SET", "requirepass", redisPassword);
  admin.disconnect();
  sentinel = await startSentinel(join(bench.dir, "sentinel"), {
    masterPort: bench.redis.port,
    masterName: "llmops",
    masterPassword: redisPassword,
    password: sentinelPassword,
  });
  redis = new Redis({ port: bench.redis.port, host: "127.0.0.1", password: redisPassword });
  // the driver reads the swap's record on this connection (the bench's Redis now wants the password)
  swaps = new SwapDriver(bench, { redis });
  delete bench.env.REDIS_URL;
  Object.assign(bench.env, {
    REDIS_SENTINELS: sentinel.address,
    REDIS_SENTINEL_MASTER: "llmops",
    REDIS_SENTINEL_PASSWORD: sentinelPassword,
    REDIS_PASSWORD: redisPassword,
  });
}, 60_000);

afterAll(async () => {
  await swaps?.close();
  redis?.disconnect();
  await bench?.stop();
  await sentinel?.stop();
});

describe("Redis through Sentinel", () => {
  it("finds the master through the sentinel and answers /llm status through the command queue", async () => {
    const config = await bench.config();
    expect(config.env.REDIS_SENTINELS).toEqual([{ host: "127.0.0.1", port: sentinel.port }]);
    const asked = await sentinelConnections();
    await bench.startBot();
    expect(await sentinelConnections()).toBeGreaterThan(asked);
    const names = await redis.client("LIST");
    expect(names).toContain("name=modelswap-worker");
    expect(names).toContain("name=modelswap-producer");

    const before = bench.slack.messages(CHANNEL).length;
    const ack = await bench.slack.command(USERS.alice, `status ${HOST} --share`, { channel: CHANNEL });
    expect(ack.ackResponse?.text).toContain(`Checking ${HOST}`);
    const status = await bench.slack.waitFor(
      () =>
        bench.slack
          .messages(CHANNEL)
          .slice(before)
          .find((m) => m.text.includes(`${HOST}:`)),
      { timeoutMs: 15_000, what: "the status answer" },
    );
    expect(status.text).toContain(`🟢 ${HOST}: healthy`);
    // the job went through the bench's Redis (the one the sentinel named), not a Redis at the default URL
    expect(Number(await redis.get("{modelswap}:commands:id"))).toBeGreaterThan(0);
  }, 30_000);

  it("runs a queued swap through the sentinel's master, from request to Swapped", async () => {
    const card = await swaps.request(LLAMA, HOST);
    const id = swaps.swapId(card.ts);
    await swaps.approve(card.ts);
    const done = await swaps.outcome(card.ts, /Swapped|Rolled back|Failed/);
    expect(done.text).toContain("Swapped");
    expect(await swaps.record(id)).toMatchObject({
      id,
      host: HOST,
      outcome: "succeeded",
      decision: { approved: true, by: USERS.bob },
    });
  }, 180_000);
});
