import { Redis, type RedisOptions } from "ioredis";
import type { Env } from "../config/env-schema.ts";

/** The part of the environment that says where Redis is: one URL, or Sentinel. */
export type RedisEnv = Pick<
  Env,
  "REDIS_URL" | "REDIS_SENTINELS" | "REDIS_SENTINEL_MASTER" | "REDIS_PASSWORD" | "REDIS_SENTINEL_PASSWORD"
>;

/** Where Redis is, for logs: never a password. */
export function describeRedis(env: RedisEnv): string {
  if (env.REDIS_SENTINELS !== undefined) {
    const sentinels = env.REDIS_SENTINELS.map(({ host, port }) => `${host}:${port}`).join(",");
    return `master ${env.REDIS_SENTINEL_MASTER} via Sentinel ${sentinels}`;
  }
  const url = new URL(env.REDIS_URL);
  url.password = "";
  return url.toString();
}

/**
 * A Redis connection for a role. Producers (the Slack side) fail fast when Redis is down, so a slash
 * command gets a clear answer within Slack's deadline; workers wait and reconnect forever, as BullMQ needs
 * (maxRetriesPerRequest: null). With REDIS_SENTINELS the connection asks the sentinels for the master,
 * and asks again after a failover; BullMQ's duplicates of it inherit that.
 */
export function createRedis(env: RedisEnv, role: "producer" | "worker"): Redis {
  const options: RedisOptions = {
    connectionName: `modelswap-${role}`,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    // a password in REDIS_URL wins over REDIS_PASSWORD (ioredis: the URL's settings come first)
    ...(env.REDIS_PASSWORD === undefined ? {} : { password: env.REDIS_PASSWORD }),
    ...(role === "producer"
      ? { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000 }
      : { maxRetriesPerRequest: null }),
  };
  if (env.REDIS_SENTINELS === undefined) return new Redis(env.REDIS_URL, options);
  return new Redis({
    ...options,
    sentinels: env.REDIS_SENTINELS,
    name: env.REDIS_SENTINEL_MASTER,
    ...(env.REDIS_SENTINEL_PASSWORD === undefined ? {} : { sentinelPassword: env.REDIS_SENTINEL_PASSWORD }),
    // follow a failover as soon as a sentinel announces it (+switch-master), not when the old master drops us
    failoverDetector: true,
  });
}

/**
 * Whether `connection` is up within `ms`: true at once when it already is, false when it did not get
 * there in time. The timer never holds the process open, and is cleared once the connection is up.
 */
export function waitReady(connection: Redis, ms: number): Promise<boolean> {
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
