import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { MODELSWAP_SLOT } from "../src/redis/redis-client.ts";
import { type BenchRedis, startRedis } from "./redis.ts";
import { until } from "./until.ts";

const run = promisify(execFile);

export interface BenchClusterOptions {
  /** Masters, each with one replica (default 3: the smallest cluster `redis-cli --cluster create` accepts). */
  masters?: number;
  /**
   * `cluster-node-timeout`: how long a master may not answer before its replica takes over (default
   * 2000 ms here; Redis's default is 15000).
   */
  nodeTimeoutMs?: number;
}

export interface BenchCluster {
  readonly nodes: readonly BenchRedis[];
  /** Every node as host:port, comma separated: REDIS_CLUSTER_NODES. */
  readonly addresses: string;
  /** Every node's host and port, as a Cluster client is given them. */
  readonly startupNodes: readonly { host: string; port: number }[];
  /** The node that is master of `slot` now (default: modelswap's), as the live nodes report it. */
  masterOf(slot?: number): Promise<BenchRedis>;
  /** Waits until `slot`'s master is not `old` and the cluster says cluster_state:ok; the new master. */
  waitFailover(old: BenchRedis, slot?: number): Promise<BenchRedis>;
  stop(): Promise<void>;
}

/**
 * A real Redis Cluster on loopback: `masters` masters and as many replicas (redis-server with
 * cluster-enabled, AOF on, noeviction), joined by `redis-cli --cluster create --cluster-replicas 1`,
 * the way the Redis docs set one up (https://redis.io/docs/latest/operate/oss_and_stack/management/scaling/).
 * Returns once every node says cluster_state:ok and every replica's link to its master is up.
 */
export async function startCluster(dir: string, options: BenchClusterOptions = {}): Promise<BenchCluster> {
  const masters = options.masters ?? 3;
  const nodeTimeoutMs = options.nodeTimeoutMs ?? 2000;
  const nodes: BenchRedis[] = [];
  const stop = async () => {
    await Promise.all(nodes.map((node) => node.stop()));
  };
  try {
    nodes.push(
      ...(await Promise.all(
        Array.from({ length: masters * 2 }, (_, i) =>
          startRedis(join(dir, `node-${i}`), { clusterNodeTimeoutMs: nodeTimeoutMs }),
        ),
      )),
    );
    await run(
      "redis-cli",
      ["--cluster", "create", ...addressesOf(nodes), "--cluster-replicas", "1", "--cluster-yes"],
      {
        timeout: 60_000,
      },
    ).catch((error: Error & { stderr?: string; stdout?: string }) => {
      throw new Error(
        `redis-cli --cluster create failed: ${error.message}\n${error.stdout ?? ""}${error.stderr ?? ""}`,
      );
    });
    await until(
      async () => (await Promise.all(nodes.map((node) => clusterReady(node.port)))).every(Boolean),
      {
        what: "every node of the Redis Cluster to say cluster_state:ok with its replicas in sync",
        timeoutMs: 30_000,
        intervalMs: 200,
      },
    );
  } catch (error) {
    await stop();
    throw error;
  }

  const masterOf = async (slot = MODELSWAP_SLOT): Promise<BenchRedis> => {
    for (const node of nodes) {
      const port = await slotMasterPort(node.port, slot).catch(() => undefined);
      const master = nodes.find((n) => n.port === port);
      if (master !== undefined) return master;
    }
    throw new Error(`no live node of the cluster names a master for slot ${slot}`);
  };

  return {
    nodes,
    addresses: addressesOf(nodes).join(","),
    startupNodes: nodes.map((node) => ({ host: "127.0.0.1", port: node.port })),
    masterOf,
    async waitFailover(old, slot = MODELSWAP_SLOT) {
      let master: BenchRedis | undefined;
      await until(
        async () => {
          const live = nodes.filter((node) => node !== old);
          for (const node of live) {
            const port = await slotMasterPort(node.port, slot).catch(() => undefined);
            if (port === undefined || port === old.port) return false;
            master = nodes.find((n) => n.port === port);
          }
          return master !== undefined && (await clusterReady(master.port, { replicas: false }));
        },
        {
          what: `a replica to take slot ${slot} over from 127.0.0.1:${old.port}`,
          timeoutMs: 60_000,
          intervalMs: 200,
        },
      );
      return master as BenchRedis;
    },
    stop,
  };
}

/** cluster_state:ok and, on a replica, its link to the master up (it has the data). */
async function clusterReady(port: number, { replicas = true } = {}): Promise<boolean> {
  const client = new Redis({ port, host: "127.0.0.1", maxRetriesPerRequest: 1, lazyConnect: true });
  client.on("error", () => undefined);
  try {
    await client.connect();
    if (!/cluster_state:ok/.test(await client.cluster("INFO"))) return false;
    const replication = await client.info("replication");
    if (!replicas || /^role:master/m.test(replication)) return true;
    return /^master_link_status:up/m.test(replication);
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/** The port of the master of `slot` as the node on `port` sees it (CLUSTER SHARDS, Redis 7). */
async function slotMasterPort(port: number, slot: number): Promise<number | undefined> {
  const client = new Redis({ port, host: "127.0.0.1", maxRetriesPerRequest: 1, lazyConnect: true });
  client.on("error", () => undefined);
  try {
    await client.connect();
    const ranges = await client.cluster("SLOTS");
    const range = ranges.find(([from, to]) => from <= slot && slot <= to);
    return range?.[2]?.[1];
  } finally {
    client.disconnect();
  }
}

function addressesOf(nodes: readonly BenchRedis[]): string[] {
  return nodes.map((node) => `127.0.0.1:${node.port}`);
}
