import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import type { RedisEnv } from "../../src/redis/redis-connection.ts";
import { type BenchCluster, type BenchClusterOptions, startCluster } from "../../testbench/redis-cluster.ts";
import { tempDir } from "./tmp.ts";

/** What useRedisCluster hands a test file once its cluster runs. */
export interface UsedCluster {
  readonly cluster: BenchCluster;
  /** The bot's environment for it: REDIS_CLUSTER_NODES, every node. */
  readonly env: RedisEnv;
  /** Disconnects `client` after the file's tests, before the cluster stops. */
  keep<C extends { disconnect(): void }>(client: C): C;
}

/**
 * A real Redis Cluster of the test file's own (testbench/redis-cluster.ts), started before its tests in
 * a temporary directory, stopped and removed after them, with the clients the tests kept disconnected
 * first. Read its fields inside tests (they are set in beforeAll).
 */
export function useRedisCluster(options: BenchClusterOptions = {}): UsedCluster {
  let dir: { path: string; remove: () => Promise<void> } | undefined;
  let cluster: BenchCluster | undefined;
  let env: RedisEnv | undefined;
  const clients: { disconnect(): void }[] = [];
  beforeAll(async () => {
    dir = await tempDir();
    cluster = await startCluster(join(dir.path, "cluster"), options);
    env = {
      REDIS_URL: "redis://127.0.0.1:1", // the schema's default is filled in; a Cluster must ignore it
      REDIS_CLUSTER_NODES: [...cluster.startupNodes],
    } as RedisEnv;
  }, 60_000);
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await cluster?.stop();
    await dir?.remove();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined)
      throw new Error("useRedisCluster: the cluster is not started yet (read it inside a test)");
    return value;
  };
  return {
    get cluster() {
      return started(cluster);
    },
    get env() {
      return started(env);
    },
    keep(client) {
      clients.push(client);
      return client;
    },
  };
}
