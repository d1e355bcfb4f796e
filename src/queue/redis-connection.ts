import { Redis, type RedisOptions } from "ioredis";

/** Every BullMQ key starts with this hash tag, so all of a deployment's keys share one Redis Cluster slot. */
export const QUEUE_PREFIX = "{modelswap}";

/**
 * A Redis connection for a role. Producers (the Slack side) fail fast when Redis is down, so a slash
 * command gets a clear answer within Slack's deadline; workers wait and reconnect forever, as BullMQ needs.
 */
export function createRedis(url: string, role: "producer" | "worker"): Redis {
  const common: RedisOptions = {
    connectionName: `modelswap-${role}`,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  };
  if (role === "producer") {
    return new Redis(url, {
      ...common,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 2000,
    });
  }
  return new Redis(url, { ...common, maxRetriesPerRequest: null });
}
