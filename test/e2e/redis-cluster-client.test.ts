import { describe, expect, it } from "vitest";
import { checkRedis } from "../../src/doctor/check-redis.ts";
import { checkBotHealth } from "../../src/http/health.ts";
import { MODELSWAP_SLOT, type RedisClient, slotOwner } from "../../src/redis/redis-client.ts";
import { createRedis, waitReady } from "../../src/redis/redis-connection.ts";
import { useRedisCluster } from "../support/redis-cluster.ts";

/**
 * The bot's connections to a real three-master Redis Cluster (REDIS_CLUSTER_NODES): `modelswap doctor`
 * and /healthz ask the node that holds modelswap's slot, not a random one; when that node is SIGKILLed
 * /healthz says so, a worker's write made meanwhile waits for the promoted replica instead of failing,
 * and /healthz is healthy again as soon as the cluster has promoted it (without waiting for ioredis's
 * 5 s slot refresh).
 */
const used = useRedisCluster();

async function connect(role: "producer" | "worker"): Promise<RedisClient> {
  const redis = used.keep(createRedis(used.env, role));
  redis.on("error", () => undefined);
  expect(await waitReady(redis, 10_000)).toBe(true);
  return redis;
}

describe("the bot on a Redis Cluster", () => {
  it("doctor names the node that holds slot 3299 and checks its settings there", async () => {
    const master = await used.cluster.masterOf();
    const rows = await checkRedis(used.env, 10_000);
    expect(rows.map((r) => [r.check, r.status])).toEqual([
      ["reachable", "pass"],
      ["eviction", "pass"],
      ["aof", "pass"],
    ]);
    expect(rows[0]?.saw).toContain(`(slot ${MODELSWAP_SLOT} on 127.0.0.1:${master.port})`);
    expect(rows[0]?.saw).toMatch(/^Redis Cluster via 127\.0\.0\.1:\d+,/);
  });

  it("follows a failover: /healthz says the slot has no master, a worker's write waits for the promoted replica", async () => {
    const producer = await connect("producer");
    const worker = await connect("worker");
    expect(await checkBotHealth(producer, [])).toMatchObject({ ok: true, redis: "ok" });
    await worker.set("{modelswap}:test:before", "1");
    // replication is asynchronous: a write the replica has not received is lost with its master (Redis
    // docs, "Redis replication"), as the clean-clone run saw under load. The bot WAITs for a replica on
    // what must survive a failover (src/store/replica-ack.ts); so does this write, on its own connection
    const owner = await slotOwner(worker);
    expect(Number(await owner!.wait(1, 10_000))).toBe(1);

    const { cluster } = used;
    const old = await cluster.masterOf();
    await old.kill();
    // written while the slot has no master: retried until the replica takes over, not failed
    const during = worker.set("{modelswap}:test:during", "2");
    const down = await checkBotHealth(producer, [], { timeoutMs: 3000 });
    expect(down.ok).toBe(false);
    expect(down.problems?.[0]).toMatch(/^Redis does not answer/);

    const promoted = await cluster.waitFailover(old);
    expect(promoted.port).not.toBe(old.port);
    expect(await during).toBe("OK");
    expect(await checkBotHealth(producer, [])).toMatchObject({ ok: true, redis: "ok" });
    expect(await worker.get("{modelswap}:test:before")).toBe("1");
    expect(await worker.get("{modelswap}:test:during")).toBe("2");
  }, 90_000);
});
