import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Bench, CHANNEL, QUICK_BENCH, startBench, USERS } from "../../testbench/bench.ts";
import { makeModel } from "../../testbench/hub/index.ts";
import { type BenchRedis, startRedis } from "../../testbench/redis.ts";
import type { SlackMessage } from "../../testbench/slack/index.ts";
import { SwapDriver } from "../../testbench/swap-driver.ts";

/**
 * Every key the bot writes carries the `{modelswap}` hash tag, so a deployment runs on Redis Cluster.
 * The bot runs against a real redis-server in cluster mode (one node owning every slot): Redis refuses
 * any multi-key command, MULTI block or Lua script whose keys span slots with CROSSSLOT, as a real
 * cluster does. A status command, a whole swap, /llm history, a cancelled swap and health checks run on
 * it; afterwards Redis has counted no CROSSSLOT error and every key it holds starts with the tag.
 */
const LLAMA = "sim-org/open-llama-1B";
const HOST = "gpu-1";
let bench: Bench;
let cluster: BenchRedis;
let redis: Redis;
let swaps: SwapDriver;

beforeAll(async () => {
  bench = await startBench({
    ...QUICK_BENCH,
    swaps: { pollSeconds: 0.2, cardUpdateSeconds: 1, healthTimeoutSeconds: 8 },
    // the monitor checks often, so its incident state and check locks are written too
    health: { intervalSeconds: 1, failureThreshold: 3 },
    hosts: [{ name: HOST, gpus: "h200-1gpu", serving: { preset: "llama-bf16-small" } }],
  });
  bench.hub.addModel(makeModel("llama-bf16-small", { id: LLAMA, gated: false }));
  cluster = await startRedis(join(bench.dir, "cluster-redis"), { cluster: true });
  redis = new Redis(cluster.url);
  expect(await redis.cluster("INFO")).toContain("cluster_state:ok");
  bench.env.REDIS_URL = cluster.url;
  await bench.startBot();
  swaps = new SwapDriver(bench, { redis: cluster.url });
}, 60_000);

afterAll(async () => {
  await swaps?.close();
  redis?.disconnect();
  await bench?.stop();
  await cluster?.stop();
});

async function answer(command: string, startsWith: string): Promise<SlackMessage> {
  const before = bench.slack.messages(CHANNEL).length;
  await bench.slack.command(USERS.alice, command, { channel: CHANNEL });
  return await bench.slack.waitFor(
    () =>
      bench.slack
        .messages(CHANNEL)
        .slice(before)
        .find((m) => m.text.startsWith(startsWith)),
    { timeoutMs: 15_000, what: `the answer to /llm ${command}` },
  );
}

async function allKeys(): Promise<string[]> {
  const keys: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = await redis.scan(cursor, "COUNT", 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== "0");
  return keys.sort();
}

describe("on Redis Cluster", () => {
  it("runs status, a swap, history and a cancelled swap with every key under the {modelswap} hash tag", async () => {
    expect((await answer(`status ${HOST} --share`, `🟢 ${HOST}`)).text).toContain("healthy");

    const first = await swaps.request(LLAMA, HOST);
    await swaps.approve(first.ts);
    expect((await swaps.outcome(first.ts, /Swapped|Rolled back|Failed/, 45_000)).text).toContain("Swapped");

    expect((await answer(`history ${HOST}`, "Swap history")).blocks).toBeDefined();

    const second = await swaps.request(LLAMA, HOST);
    await swaps.plan(second.ts);
    const secondId = swaps.swapId(second.ts);
    const ack = await bench.slack.command(USERS.alice, `cancel ${secondId}`, { channel: CHANNEL });
    expect(ack.ackResponse?.text).toContain(`Cancelling swap \`${secondId}\``);
    await swaps.outcome(second.ts, /Cancelled/, 20_000);

    // Redis counts every error it answers: a key outside the tag in a multi-key operation is a CROSSSLOT
    expect(await redis.info("errorstats")).not.toContain("CROSSSLOT");
    const keys = await allKeys();
    expect(keys.filter((key) => !key.startsWith("{modelswap}:"))).toEqual([]);
    // the run wrote every kind of key the bot has, so the check above covered them all
    for (const kind of [
      /^\{modelswap\}:commands:/,
      /^\{modelswap\}:swaps:/,
      /^\{modelswap\}:monitor:/,
      /^\{modelswap\}:reports:/,
      /^\{modelswap\}:store:swap:sw-[^:]+$/,
      /^\{modelswap\}:store:swap:sw-[^:]+:events$/,
      /^\{modelswap\}:store:swap:sw-[^:]+:report$/,
      /^\{modelswap\}:store:swap:sw-[^:]+:decisions$/,
      /^\{modelswap\}:store:swap:sw-[^:]+:cancel$/,
      /^\{modelswap\}:store:ledger$/,
      /^\{modelswap\}:store:ledger:host:gpu-1$/,
      /^\{modelswap\}:store:plan-message:/,
      /^\{modelswap\}:store:host:gpu-1:serving$/,
      /^\{modelswap\}:store:host:gpu-1:health$/,
      /^\{modelswap\}:store:audit$/,
      /^\{modelswap\}:store:tally$/,
      /^\{modelswap\}:store:version$/,
    ]) {
      expect(
        keys.some((key) => kind.test(key)),
        `a key matching ${kind} in ${keys.join(" ")}`,
      ).toBe(true);
    }
  }, 90_000);
});
