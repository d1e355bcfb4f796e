import type { RedisClient } from "../redis/redis-client.ts";
import { keys } from "./keys.ts";
import type { ReplicaAck } from "./replica-ack.ts";
import type { SaveWrites } from "./save-writes.ts";

const RELEASE_IF_HELD = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;
/** The lease, and with it the next fence number (KEYS: lease, counter; ARGV: token, ms). */
const TAKE_LEASE = `if redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX') then return redis.call('incr', KEYS[2]) else return false end`;
/** A fence number above `seen`, for the lease's holder only (KEYS: lease, counter; ARGV: token, seen). */
const CATCH_UP = `if redis.call('get', KEYS[1]) ~= ARGV[1] then return false end
local n = tonumber(redis.call('get', KEYS[2]) or '0')
if n < tonumber(ARGV[2]) then redis.call('set', KEYS[2], ARGV[2]) end
return redis.call('incr', KEYS[2])`;
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

  /** The same, with the save of the swap's final record. */
  unlockHostInTransaction(tx: SaveWrites, host: string, swapId: string): void {
    tx.delIfHolds(keys.hostLock(host), swapId);
  }

  /**
   * Taken for `ms`, renewed by its holder, given back at the end of each advance. Returns the run's fence
   * number (src/host/fence.ts: larger than any taken before, for any swap), or undefined when another run
   * holds the lease.
   */
  async takeLease(swapId: string, token: string, ms: number): Promise<number | undefined> {
    const number = await this.redis.eval(
      TAKE_LEASE,
      2,
      keys.swapLease(swapId),
      keys.fence,
      token,
      String(ms),
    );
    if (typeof number !== "number") return undefined;
    // a lease lost in a failover would let a second run advance the swap beside this one
    await this.replicas?.confirm(`the lease of swap ${swapId}`);
    return number;
  }

  /**
   * A host's fence has seen `seen`, more than the number of the run holding `token`: Redis's counter fell
   * behind (a failover or restart lost writes). A new number above `seen` for that run, or undefined when
   * it no longer holds the lease (another run has the swap: the host was right to refuse it).
   */
  async catchUpFence(swapId: string, token: string, seen: number): Promise<number | undefined> {
    const number = await this.redis.eval(
      CATCH_UP,
      2,
      keys.swapLease(swapId),
      keys.fence,
      token,
      String(seen),
    );
    if (typeof number !== "number") return undefined;
    await this.replicas?.confirm(`the fence number of swap ${swapId}`);
    return number;
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
