import type { Cluster, Redis } from "ioredis";

/**
 * A connection to modelswap's Redis: one server (REDIS_URL, or the master Sentinel names) or a Redis
 * Cluster (REDIS_CLUSTER_NODES). Every key modelswap writes carries the `{modelswap}` hash tag, so on a
 * Cluster they all live in one slot, and multi-key scripts and transactions work as on one server.
 */
export type RedisClient = Redis | Cluster;

/** The Cluster slot of every modelswap key: `CLUSTER KEYSLOT {modelswap}` (CRC16 of "modelswap" mod 16384). */
export const MODELSWAP_SLOT = 3299;

export function isCluster(redis: RedisClient): redis is Cluster {
  return redis.isCluster;
}

/**
 * The connection to the server that holds modelswap's keys: the client itself on one server; on a
 * Cluster, the client's own connection to the master of modelswap's slot. Commands that name no key (PING,
 * SCAN, CONFIG, WAIT) go to a random node on a Cluster, so they are sent here instead. When the Cluster
 * client does not know a live master for the slot (its master died: ioredis learns the new one from a
 * MOVED, or from its slot refresh every 5 s) the slots are asked for once more. Undefined while the
 * cluster itself has no master for it (in the middle of a failover) or is not reachable.
 */
export async function slotOwner(redis: RedisClient): Promise<Redis | undefined> {
  if (!isCluster(redis)) return redis;
  const known = () => {
    const owner = redis.slots[MODELSWAP_SLOT]?.[0];
    return redis.nodes("master").find((node) => `${node.options.host}:${node.options.port}` === owner);
  };
  const now = known();
  if (now !== undefined || redis.status !== "ready") return now;
  await new Promise<void>((resolve) => redis.refreshSlotsCache(() => resolve()));
  return known();
}

/** slotOwner, or an error that says the Cluster does not know it yet. */
export async function requireSlotOwner(redis: RedisClient): Promise<Redis> {
  const owner = await slotOwner(redis);
  if (owner === undefined) {
    throw new Error(`the Redis Cluster does not know which node holds slot ${MODELSWAP_SLOT} yet`);
  }
  return owner;
}
