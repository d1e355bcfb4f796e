import { type Cluster, Redis } from "ioredis";
import { expect, it } from "vitest";
import { slotOwner } from "../../src/redis/redis-client.ts";
import { createRedis, waitReady } from "../../src/redis/redis-connection.ts";
import type { BenchRedis } from "../../testbench/redis.ts";
import type { BenchCluster } from "../../testbench/redis-cluster.ts";
import { until } from "../../testbench/until.ts";
import { useRedisCluster } from "../support/redis-cluster.ts";

/**
 * A worker's Cluster connection that is reconnected while the cluster says cluster_state:fail (between a
 * master's death and its replica's promotion) comes back once the cluster is whole again. BullMQ does
 * exactly this when its blocking command outlives its watchdog (RedisConnection.reconnect awaits
 * `connect()`); with ioredis's own Cluster that promise was never settled (its ready check fails, it
 * disconnects to try again and forgets the caller), and the failover test's reporter waited for ever.
 * The cluster is held in cluster_state:fail here by SIGKILLing modelswap's master while its replica is
 * SIGSTOPped; once the replica runs again it is promoted and the cluster is whole.
 */
const used = useRedisCluster({ nodeTimeoutMs: 1000 });

it("a worker's Cluster connection reconnected while the cluster is down settles once it is up again", async () => {
  const { cluster } = used;
  const connection = used.keep(createRedis(used.env, "worker") as Cluster);
  connection.on("error", () => undefined);
  // the blocking connection BullMQ makes of it (ioredis-client.js: duplicate(undefined, { redisOptions }))
  const worker = connection.duplicate(undefined, {
    redisOptions: { connectionName: "modelswap-worker-blocking" },
  });
  worker.on("error", () => undefined);
  used.keep(worker);
  expect(await waitReady(worker, 10_000)).toBe(true);

  // modelswap's master dies and its replica cannot take over yet: the cluster has no master for the slot
  const master = await cluster.masterOf();
  const replica = await replicaOf(cluster, master);
  replica.pause();
  await master.kill();
  let settled: "resolved" | "rejected" | undefined;
  try {
    const witness = cluster.nodes.find((n) => n !== master && n !== replica) as BenchRedis;
    await until(async () => /cluster_state:fail/.test(await clusterInfo(witness)), {
      what: "the cluster to say cluster_state:fail",
      timeoutMs: 20_000,
      intervalMs: 100,
    });

    // what BullMQ's reset of a blocking connection does: disconnect, wait for the end, connect again
    const ended = new Promise((resolve) => worker.once("end", resolve));
    worker.disconnect();
    await ended;
    void worker.connect().then(
      () => (settled = "resolved"),
      () => (settled = "rejected"),
    );
    // its ready check meets cluster_state:fail at least once (ioredis asks again every retry)
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(settled).toBeUndefined();
  } finally {
    replica.resume();
  }
  await until(async () => settled !== undefined, {
    what: "the worker's connect() to settle after the cluster came back",
    timeoutMs: 30_000,
    intervalMs: 100,
  }).catch(() => undefined);
  // (before the fix: undefined here while the client itself said "ready")
  expect(settled, `connect() settled: ${settled}; the client's status: ${worker.status}`).toBe("resolved");
  expect(worker.status).toBe("ready");
  // and it serves: a write to modelswap's slot goes through
  expect(await worker.set("{modelswap}:test:after-reconnect", "1")).toBe("OK");
  expect(await slotOwner(worker)).toBeDefined();
}, 90_000);

/** `CLUSTER INFO` of one node. */
async function clusterInfo(node: BenchRedis): Promise<string> {
  const client = new Redis({ port: node.port, host: "127.0.0.1", maxRetriesPerRequest: 1 });
  client.on("error", () => undefined);
  try {
    return await client.cluster("INFO");
  } finally {
    client.disconnect();
  }
}

/** The replica of `master`, as CLUSTER NODES names it (`<id> <ip:port@cport> <flags> <master-id> …`). */
async function replicaOf(cluster: BenchCluster, master: BenchRedis): Promise<BenchRedis> {
  const client = new Redis({ port: master.port, host: "127.0.0.1", maxRetriesPerRequest: 1 });
  try {
    const text = (await client.call("CLUSTER", "NODES")) as string;
    const rows = text
      .trim()
      .split("\n")
      .map((line) => line.split(" "));
    const portOf = (row: string[]) => Number(/:(\d+)@/.exec(row[1] ?? "")?.[1]);
    const id = rows.find((row) => portOf(row) === master.port)?.[0];
    const replica = cluster.nodes.find((n) => rows.some((row) => row[3] === id && portOf(row) === n.port));
    if (replica === undefined)
      throw new Error(`no replica of 127.0.0.1:${master.port} in CLUSTER NODES:\n${text}`);
    return replica;
  } finally {
    client.disconnect();
  }
}
