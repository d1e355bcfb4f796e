import { Cluster, type ClusterOptions, Redis, type RedisOptions } from "ioredis";
import type { Env } from "../config/env-schema.ts";
import { redactRedisUrl } from "../config/redis-env.ts";
import type { RedisClient } from "./redis-client.ts";
import { settlingConnect } from "./settling-cluster.ts";

/** The part of the environment that says where Redis is: one URL, Sentinel, or a Cluster's nodes. */
export type RedisEnv = Pick<
  Env,
  | "REDIS_URL"
  | "REDIS_SENTINELS"
  | "REDIS_SENTINEL_MASTER"
  | "REDIS_PASSWORD"
  | "REDIS_SENTINEL_PASSWORD"
  | "REDIS_CLUSTER_NODES"
>;

/** Where Redis is, for logs and doctor: never a credential (REDIS_URL's are `***`). */
export function describeRedis(env: RedisEnv): string {
  if (env.REDIS_CLUSTER_NODES !== undefined) {
    return `Redis Cluster via ${env.REDIS_CLUSTER_NODES.map(({ host, port }) => `${host}:${port}`).join(",")}`;
  }
  if (env.REDIS_SENTINELS !== undefined) {
    const sentinels = env.REDIS_SENTINELS.map(({ host, port }) => `${host}:${port}`).join(",");
    return `master ${env.REDIS_SENTINEL_MASTER} via Sentinel ${sentinels}`;
  }
  return redactRedisUrl(env.REDIS_URL, env.REDIS_PASSWORD !== undefined);
}

/**
 * How long a worker's command keeps being retried while a Cluster fails over: ioredis retries a command
 * that met CLUSTERDOWN, TRYAGAIN or a closed connection every `retryDelayOn…` ms, up to `maxRedirections`
 * times (16 × 100 ms by default, 1.6 s, much shorter than a failover: a replica is promoted only after
 * `cluster-node-timeout`, 15 s by default). A worker waits for Redis forever on one server
 * (maxRetriesPerRequest: null); on a Cluster it waits this long, then the step fails as on any Redis
 * error and the job is retried by BullMQ.
 */
export const CLUSTER_FAILOVER_PATIENCE_MS = 120_000;
const CLUSTER_RETRY_DELAY_MS = 250;

/**
 * A Redis connection for a role. Producers (the Slack side) fail fast when Redis is down, so a slash
 * command gets a clear answer within Slack's deadline; workers wait and reconnect forever, as BullMQ needs
 * (maxRetriesPerRequest: null). With REDIS_SENTINELS the connection asks the sentinels for the master,
 * and asks again after a failover; BullMQ's duplicates of it inherit that. With REDIS_CLUSTER_NODES it
 * is a Cluster client: it learns which node holds modelswap's slot from the nodes given, follows MOVED
 * redirects, and finds the promoted replica after a failover.
 */
export function createRedis(env: RedisEnv, role: "producer" | "worker"): RedisClient {
  const options: RedisOptions = {
    connectionName: `modelswap-${role}`,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    // a password in REDIS_URL wins over REDIS_PASSWORD (ioredis: the URL's settings come first)
    ...(env.REDIS_PASSWORD === undefined ? {} : { password: env.REDIS_PASSWORD }),
    ...(role === "producer"
      ? { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000 }
      : { maxRetriesPerRequest: null }),
  };
  if (env.REDIS_CLUSTER_NODES !== undefined) return createCluster(env.REDIS_CLUSTER_NODES, options, role);
  if (env.REDIS_SENTINELS === undefined)
    return new Redis(withPassword(env.REDIS_URL, env.REDIS_PASSWORD), options);
  return new Redis({
    ...options,
    sentinels: env.REDIS_SENTINELS,
    name: env.REDIS_SENTINEL_MASTER,
    ...(env.REDIS_SENTINEL_PASSWORD === undefined ? {} : { sentinelPassword: env.REDIS_SENTINEL_PASSWORD }),
    // No failoverDetector: its +switch-master handler calls the connector's disconnect(), and when that
    // lands while the connection is reconnecting (asking a sentinel for the master, as it does over and over
    // once the old master died) the connect in progress throws "Connection is closed" and ioredis sets the
    // connection to `end` for good (SentinelConnector.connect, Redis._connect in ioredis 6): the process
    // then never reaches Redis again. Without it the connection moves when the old master drops it (a
    // failover closes its clients; a dead one refuses), and asks the sentinels again.
  });
}

/**
 * REDIS_URL with REDIS_PASSWORD in it when the URL names a user but no password (docs/redis.md: the
 * password comes from REDIS_PASSWORD when the URL carries none). ioredis reads `redis://user@host` as that
 * user with an empty password, which overrides the `password` option.
 */
function withPassword(url: string, password: string | undefined): string {
  if (password === undefined) return url;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url;
  }
  if (parsed.username === "" || parsed.password !== "") return url;
  parsed.password = encodeURIComponent(password);
  return parsed.toString();
}

function createCluster(
  nodes: NonNullable<RedisEnv["REDIS_CLUSTER_NODES"]>,
  { retryStrategy, enableOfflineQueue, ...redisOptions }: RedisOptions,
  role: "producer" | "worker",
): Cluster {
  const options: ClusterOptions = {
    // the node connections: a node that is lost is not reconnected (ioredis waits for MOVED and asks the
    // cluster for its slots again), so the Cluster's own retry strategy is the one that reconnects
    redisOptions,
    clusterRetryStrategy: retryStrategy ?? null,
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
    // a producer answers Slack within its deadline: one round of ioredis's default retries (1.6 s)
    ...(role === "worker"
      ? {
          retryDelayOnFailover: CLUSTER_RETRY_DELAY_MS,
          retryDelayOnClusterDown: CLUSTER_RETRY_DELAY_MS,
          retryDelayOnTryAgain: CLUSTER_RETRY_DELAY_MS,
          maxRedirections: Math.ceil(CLUSTER_FAILOVER_PATIENCE_MS / CLUSTER_RETRY_DELAY_MS),
        }
      : {}),
  };
  // a Cluster whose connect() settles once the cluster is whole again (see settling-cluster.ts)
  return settlingConnect(new Cluster(nodes, options));
}

/**
 * Whether `connection` is up within `ms`: true at once when it already is, false when it did not get
 * there in time. The timer never holds the process open, and is cleared once the connection is up.
 */
export function waitReady(connection: RedisClient, ms: number): Promise<boolean> {
  if (connection.status === "ready") return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      connection.off("ready", up);
      resolve(false);
    }, ms).unref();
    const up = () => {
      clearTimeout(timer);
      resolve(true);
    };
    connection.once("ready", up);
  });
}
