import type { Redis } from "ioredis";
import { redactSecretsInJson } from "../log.ts";
import { tallyInTransaction } from "../metrics/swap-tally.ts";
import { QUEUE_PREFIX } from "../queue/redis-connection.ts";
import type { Decision, SwapRecord } from "./swap-record.ts";

const key = (...parts: string[]) => `${QUEUE_PREFIX}:${parts.join(":")}`;

/** What a host serves now, as modelswap last left it (the config's currentUnit until the first swap). */
export interface ServingState {
  unit: string;
  repo?: string;
  sha?: string;
  modelDir?: string;
  since: string;
  swapId?: string;
}

/**
 * Swap records and the facts that must survive restarts, in Redis under the deployment's hash tag:
 * one key per swap, a per-host lock (one active swap per host), first-wins decisions, and what each host
 * serves.
 */
export class SwapStore {
  private readonly secrets: readonly string[];

  /** `secrets` are replaced by `[redacted]` in every record saved: an error text may have carried one. */
  constructor(
    private readonly redis: Redis,
    options: { secrets?: readonly string[] } = {},
  ) {
    this.secrets = options.secrets ?? [];
  }

  async get(id: string): Promise<SwapRecord | undefined> {
    const raw = await this.redis.get(key("swap", id));
    return raw === null ? undefined : (JSON.parse(raw) as SwapRecord);
  }

  async save(record: SwapRecord): Promise<void> {
    const created = Date.parse(record.createdAt);
    const tx = this.redis
      .multi()
      .set(key("swap", record.id), redactSecretsInJson(JSON.stringify(record), this.secrets))
      .zadd(key("swaps"), created, record.id)
      .zadd(key("swaps", "host", record.host), created, record.id);
    // a finished swap is counted for /metrics in the same transaction that records its outcome
    tallyInTransaction(tx, record);
    await tx.exec();
  }

  /**
   * The ledger: swap records newest first (by creation time), of one host or of all, at most `limit`;
   * `before` (an ISO time, exclusive) pages further back. Records are never deleted, so this is every
   * swap ever requested, dry runs included.
   */
  async history(query: { host?: string; limit: number; before?: string }): Promise<SwapRecord[]> {
    if (query.limit <= 0) return [];
    const index = query.host === undefined ? key("swaps") : key("swaps", "host", query.host);
    const max = query.before === undefined ? "+inf" : `(${Date.parse(query.before)}`;
    const ids = await this.redis.zrevrangebyscore(index, max, "-inf", "LIMIT", 0, query.limit);
    if (ids.length === 0) return [];
    const raws = await this.redis.mget(ids.map((id) => key("swap", id)));
    return raws.filter((raw): raw is string => raw !== null).map((raw) => JSON.parse(raw) as SwapRecord);
  }

  /** Takes the host for this swap; returns the swap that holds it when it is busy. */
  async lockHost(host: string, swapId: string): Promise<{ ok: true } | { ok: false; holder: string }> {
    const set = await this.redis.set(key("lock", "host", host), swapId, "NX");
    if (set === "OK") return { ok: true };
    const holder = await this.redis.get(key("lock", "host", host));
    if (holder === null) return this.lockHost(host, swapId);
    return { ok: false, holder };
  }

  async hostLockHolder(host: string): Promise<string | undefined> {
    return (await this.redis.get(key("lock", "host", host))) ?? undefined;
  }

  /** Releases the host only if this swap holds it. */
  async unlockHost(host: string, swapId: string): Promise<void> {
    await this.redis.eval(
      "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end",
      1,
      key("lock", "host", host),
      swapId,
    );
  }

  /**
   * The lease of one swap: whoever holds it may advance the swap and save its record. BullMQ's job lock
   * alone is not enough: a process whose event loop stalls past the lock sees its step run again
   * elsewhere (or by itself) while it still runs; the lease makes the late one stop instead of
   * overwriting the record. Taken for `ms`, renewed by its holder, given back at the end of each advance.
   */
  async takeLease(swapId: string, token: string, ms: number): Promise<boolean> {
    return (await this.redis.set(key("lease", "swap", swapId), token, "PX", ms, "NX")) === "OK";
  }

  /** Extends the lease if `token` still holds it; false when it was lost. */
  async renewLease(swapId: string, token: string, ms: number): Promise<boolean> {
    const renewed = await this.redis.eval(
      "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end",
      1,
      key("lease", "swap", swapId),
      token,
      String(ms),
    );
    return renewed === 1;
  }

  async holdsLease(swapId: string, token: string): Promise<boolean> {
    return (await this.redis.get(key("lease", "swap", swapId))) === token;
  }

  async releaseLease(swapId: string, token: string): Promise<void> {
    await this.redis.eval(
      "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end",
      1,
      key("lease", "swap", swapId),
      token,
    );
  }

  /** Records a decision if none was recorded yet for this plan; returns the one that stands. */
  async decide(swapId: string, decision: Decision): Promise<{ recorded: boolean; decision: Decision }> {
    const k = key("decision", swapId, decision.planHash);
    const set = await this.redis.set(k, JSON.stringify(decision), "NX");
    if (set === "OK") return { recorded: true, decision };
    const existing = await this.redis.get(k);
    return { recorded: false, decision: JSON.parse(existing ?? "null") as Decision };
  }

  async decision(swapId: string, planHash: string): Promise<Decision | undefined> {
    const raw = await this.redis.get(key("decision", swapId, planHash));
    return raw === null ? undefined : (JSON.parse(raw) as Decision);
  }

  async indexPlanMessage(channel: string, ts: string, swapId: string): Promise<void> {
    await this.redis.set(key("planmsg", channel, ts), swapId);
  }

  async swapForPlanMessage(channel: string, ts: string): Promise<string | undefined> {
    return (await this.redis.get(key("planmsg", channel, ts))) ?? undefined;
  }

  async serving(host: string): Promise<ServingState | undefined> {
    const raw = await this.redis.get(key("host", host, "serving"));
    return raw === null ? undefined : (JSON.parse(raw) as ServingState);
  }

  async setServing(host: string, state: ServingState): Promise<void> {
    await this.redis.set(key("host", host, "serving"), JSON.stringify(state));
  }

  async lastBenchmark(host: string): Promise<{ repo: string; result: unknown } | undefined> {
    const raw = await this.redis.get(key("host", host, "benchmark"));
    return raw === null ? undefined : (JSON.parse(raw) as { repo: string; result: unknown });
  }

  async setLastBenchmark(host: string, repo: string, result: unknown): Promise<void> {
    await this.redis.set(key("host", host, "benchmark"), JSON.stringify({ repo, result }));
  }

  /** Asks a swap to stop; the first request stands. */
  async requestCancel(swapId: string, by: string): Promise<boolean> {
    const set = await this.redis.set(
      key("cancel", swapId),
      JSON.stringify({ by, at: new Date().toISOString() }),
      "NX",
    );
    return set === "OK";
  }

  async cancelRequest(swapId: string): Promise<{ by: string; at: string } | undefined> {
    const raw = await this.redis.get(key("cancel", swapId));
    return raw === null ? undefined : (JSON.parse(raw) as { by: string; at: string });
  }
}
