import type { ChainableCommander } from "ioredis";
import type { RedisClient } from "../queue/redis-client.ts";
import { keys } from "./keys.ts";
import type { ReplicaAck } from "./replica-ack.ts";

const RELEASE_IF_HELD = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;
const RENEW_IF_HELD = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`;

/**
 * Who may work on what: the host lock (one active swap per host, held from the request to the end of
 * the swap) and the swap lease (one run of a swap at a time). The host lock has no TTL on purpose: a
 * swap may wait days for a worker (all of them stopped) and must keep its host; a lock whose swap can
 * no longer run is found and cleared by src/store/host-lock-check.ts instead. BullMQ's job lock alone is not enough: a
 * process whose event loop stalls past the lock sees its step run again elsewhere while it still runs;
 * the lease makes the late one stop instead of overwriting the record the run that took over wrote.
 */
export class SwapLocks {
  constructor(
    private readonly redis: RedisClient,
    private readonly replicas?: ReplicaAck,
  ) {}

  /**
   * Takes the host for this swap; returns the swap that holds it when it is busy. A lock a failover lost
   * would let a second swap take the host: it is confirmed by a replica before the swap goes on.
   */
  async lockHost(host: string, swapId: string): Promise<{ ok: true } | { ok: false; holder: string }> {
    for (;;) {
      if ((await this.redis.set(keys.hostLock(host), swapId, "NX")) === "OK") {
        await this.replicas?.confirm(`the lock of ${host} for swap ${swapId}`);
        return { ok: true };
      }
      const holder = await this.redis.get(keys.hostLock(host));
      if (holder !== null) return { ok: false, holder };
    }
  }

  async hostHolder(host: string): Promise<string | undefined> {
    return (await this.redis.get(keys.hostLock(host))) ?? undefined;
  }

  /** Releases the host only if this swap holds it (compare and delete); true when it did. */
  async unlockHost(host: string, swapId: string): Promise<boolean> {
    return (await this.redis.eval(RELEASE_IF_HELD, 1, keys.hostLock(host), swapId)) === 1;
  }

  /** The same, inside the MULTI that saves the swap's final record. */
  unlockHostInTransaction(tx: ChainableCommander, host: string, swapId: string): void {
    tx.eval(RELEASE_IF_HELD, 1, keys.hostLock(host), swapId);
  }

  /** Taken for `ms`, renewed by its holder, given back at the end of each advance. */
  async takeLease(swapId: string, token: string, ms: number): Promise<boolean> {
    if ((await this.redis.set(keys.swapLease(swapId), token, "PX", ms, "NX")) !== "OK") return false;
    // a lease lost in a failover would let a second run advance the swap beside this one
    await this.replicas?.confirm(`the lease of swap ${swapId}`);
    return true;
  }

  /** Extends the lease if `token` still holds it; false when it was lost. */
  async renewLease(swapId: string, token: string, ms: number): Promise<boolean> {
    return (await this.redis.eval(RENEW_IF_HELD, 1, keys.swapLease(swapId), token, String(ms))) === 1;
  }

  /** Whether some run holds the swap's lease now: a process is advancing (or ending) that swap. */
  async leaseHeld(swapId: string): Promise<boolean> {
    return (await this.redis.exists(keys.swapLease(swapId))) === 1;
  }

  async holdsLease(swapId: string, token: string): Promise<boolean> {
    return (await this.redis.get(keys.swapLease(swapId))) === token;
  }

  async releaseLease(swapId: string, token: string): Promise<void> {
    await this.redis.eval(RELEASE_IF_HELD, 1, keys.swapLease(swapId), token);
  }
}

export { RELEASE_IF_HELD, RENEW_IF_HELD };
