import type { Redis } from "ioredis";
import type { Logger } from "../log.ts";
import { type RedisClient, slotOwner } from "../redis/redis-client.ts";

/** How long a write waits for a replica to confirm it before the swap goes on without that confirmation. */
export const REPLICA_ACK_TIMEOUT_MS = 1000;
/** How long a reading of the master's connected replicas is trusted before INFO is asked again. */
const REPLICAS_FRESH_MS = 10_000;

/** What one confirmation found: how many replicas the master has, and how many confirmed the write. */
export interface ReplicaAckResult {
  replicas: number;
  acked: number;
}

/**
 * Redis replicates asynchronously: the master answers a write before any replica has it, so a master
 * that dies in that moment takes the write with it, and the replica promoted in its place (by Sentinel
 * or by the Cluster) never saw it. For most of what modelswap writes that is harmless (a step re-runs,
 * and every step is idempotent). For the writes that decide who may touch a host (the host lock, a swap's
 * lease) and for a swap's saved step (what it has done to the host), the store asks Redis to confirm
 * that a replica has the write (WAIT 1, on the connection that wrote it, on the master of modelswap's
 * slot) before the swap goes on to touch the host.
 *
 * Without replicas there is nothing to wait for and nothing is asked (INFO replication, read at most
 * every 10 s per master). When no replica confirms within REPLICA_ACK_TIMEOUT_MS the swap goes on
 * anyway (Redis being slow must not stop a switch half done), and the log says once, with a code, that a
 * failover in that window could lose the write. A failure of WAIT or INFO never fails the write: it
 * happened.
 */
export class ReplicaAck {
  private known: { node: Redis; replicas: number; readAt: number } | undefined;
  /** When the last confirmation timed out; while it is recent, writes do not wait again (see confirm). */
  private laggingSince: number | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly log: Logger | undefined,
    private readonly timeoutMs = REPLICA_ACK_TIMEOUT_MS,
  ) {
    // connected again, perhaps to another master (Sentinel moves the same connection to the promoted
    // replica, which has no replica of its own yet): what was read of the old one no longer holds
    redis.on("ready", () => {
      this.known = undefined;
      this.laggingSince = undefined;
    });
  }

  /** Waits until a replica has every write made so far on modelswap's connection; `what` names it for the log. */
  async confirm(what: string): Promise<ReplicaAckResult> {
    const node = await slotOwner(this.redis);
    if (node === undefined) return { replicas: 0, acked: 0 };
    try {
      const replicas = await this.replicasOf(node);
      if (replicas === 0) return { replicas, acked: 0 };
      // WAIT holds the connection, and every swap of this process shares it: after a timeout, writes go
      // on without waiting until the replicas are read again, so a stuck replica costs one timeout per
      // 10 s, not one per write
      if (this.laggingSince !== undefined && Date.now() - this.laggingSince < REPLICAS_FRESH_MS)
        return { replicas, acked: 0 };
      const acked = Number(await node.wait(1, this.timeoutMs));
      if (acked === 0) {
        const first = this.laggingSince === undefined;
        this.laggingSince = Date.now();
        if (first)
          this.log?.warn(
            { code: "REDIS_REPLICA_LAGGING", what, replicas, timeoutMs: this.timeoutMs },
            `no Redis replica confirmed ${what} within ${this.timeoutMs} ms; going on: a failover before the replica catches up would lose it. Fix: check the replicas' link (redis-cli INFO replication: master_link_status, lag); see docs/redis.md`,
          );
      } else if (this.laggingSince !== undefined) {
        this.laggingSince = undefined;
        this.log?.info({ what }, "a Redis replica confirms modelswap's writes again");
      }
      return { replicas, acked };
    } catch (error) {
      this.log?.debug({ what, err: (error as Error).message }, "could not ask Redis to confirm a write");
      this.known = undefined;
      return { replicas: 0, acked: 0 };
    }
  }

  private async replicasOf(node: Redis): Promise<number> {
    const known = this.known;
    if (known !== undefined && known.node === node && Date.now() - known.readAt < REPLICAS_FRESH_MS)
      return known.replicas;
    const info = await node.info("replication");
    const replicas = Number(/^connected_slaves:(\d+)/m.exec(info)?.[1] ?? "0");
    this.known = { node, replicas, readAt: Date.now() };
    return replicas;
  }
}
