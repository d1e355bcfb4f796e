import { newCopyKey } from "../host/copy-key.ts";
import { type CopyKey, copyKeySchema, type PeerSource, peerSourceSchema } from "../host/peer-copy.ts";
import type { RedisClient } from "../redis/redis-client.ts";
import { keys } from "./keys.ts";

/** How long a rollout's copy state and key live in Redis: far longer than its copies take. */
const TTL_SECONDS = 3 * 86_400;

/**
 * The least busy serving host other than the target, below the fan-out, taken for the target in one step
 * (two targets never both take a host's last slot). A target that holds a claim gets it back (a worker
 * that died mid-copy attaches to the copy it started).
 * KEYS: sources, load, claims. ARGV: target, fanout, ttl seconds.
 */
const CLAIM = `
local held = redis.call('HGET', KEYS[3], ARGV[1])
if held then return {held, redis.call('HGET', KEYS[1], held) or ''} end
local best, bestLoad = nil, nil
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local host = all[i]
  if host ~= ARGV[1] then
    local load = tonumber(redis.call('HGET', KEYS[2], host) or '0')
    if load < tonumber(ARGV[2]) and (bestLoad == nil or load < bestLoad or (load == bestLoad and host < best)) then
      best, bestLoad = host, load
    end
  end
end
if not best then return false end
redis.call('HINCRBY', KEYS[2], best, 1)
redis.call('HSET', KEYS[3], ARGV[1], best)
for i = 1, 3 do redis.call('EXPIRE', KEYS[i], ARGV[3]) end
return {best, redis.call('HGET', KEYS[1], best)}
`;

/** The target's claim let go: its source has a slot free again. KEYS: load, claims. ARGV: target. */
const RELEASE = `
local held = redis.call('HGET', KEYS[2], ARGV[1])
if not held then return 0 end
redis.call('HDEL', KEYS[2], ARGV[1])
if tonumber(redis.call('HINCRBY', KEYS[1], held, -1)) < 0 then redis.call('HSET', KEYS[1], held, 0) end
return 1
`;

/**
 * A rollout's peer copies in Redis: which of its hosts serve the verified files, how many copies each
 * serves now, who copies from whom, and the rollout's copy key. The swaps of the rollout's hosts use it
 * (jobs/swap/peer-port.ts); the copies themselves run on the hosts.
 */
export class PeerCopies {
  constructor(private readonly redis: RedisClient) {}

  /** The rollout's copy key: made by the first host that asks, the same for every host after. */
  async copyKey(rolloutId: string): Promise<CopyKey> {
    const key = keys.peerKey(rolloutId);
    if ((await this.redis.exists(key)) === 0) {
      // two hosts asking at once: the first key written is the rollout's
      const made = JSON.stringify(newCopyKey(`modelswap ${rolloutId}`));
      await this.redis.set(key, made, "EX", TTL_SECONDS, "NX");
    }
    const raw = await this.redis.get(key);
    if (raw === null) throw new Error(`the copy key of ${rolloutId} is gone from Redis`);
    return copyKeySchema.parse(JSON.parse(raw));
  }

  /** `source` serves its files to the rollout's other hosts. */
  async serve(rolloutId: string, source: PeerSource): Promise<void> {
    await this.redis
      .multi()
      .hset(keys.peerSources(rolloutId), source.host, JSON.stringify(source))
      .hdel(keys.peerUnable(rolloutId), source.host)
      .expire(keys.peerSources(rolloutId), TTL_SECONDS)
      .exec();
  }

  /** `host` serves no more (its swap ended): no new copy starts from it; a running one goes on. */
  async unserve(rolloutId: string, host: string): Promise<void> {
    await this.redis.hdel(keys.peerSources(rolloutId), host);
  }

  /** `host` holds the files but cannot serve them, and why (no rrsync there, its key unseen). */
  async cannotServe(rolloutId: string, host: string, why: string): Promise<void> {
    await this.redis
      .multi()
      .hset(keys.peerUnable(rolloutId), host, why)
      .expire(keys.peerUnable(rolloutId), TTL_SECONDS)
      .exec();
  }

  async unable(rolloutId: string): Promise<Record<string, string>> {
    return await this.redis.hgetall(keys.peerUnable(rolloutId));
  }

  async sources(rolloutId: string): Promise<PeerSource[]> {
    const all = await this.redis.hgetall(keys.peerSources(rolloutId));
    return Object.values(all).map((json) => peerSourceSchema.parse(JSON.parse(json)));
  }

  /**
   * A serving host for `target` to copy from, taken (it counts against that host's `fanout`), or
   * undefined when none has a free slot now. A target holding a claim gets its claim back.
   */
  async claim(rolloutId: string, target: string, fanout: number): Promise<PeerSource | undefined> {
    const reply = (await this.redis.eval(
      CLAIM,
      3,
      keys.peerSources(rolloutId),
      keys.peerLoad(rolloutId),
      keys.peerClaims(rolloutId),
      target,
      String(fanout),
      String(TTL_SECONDS),
    )) as [string, string] | null;
    if (reply === null) return undefined;
    const [, json] = reply;
    // a claim held on a host that serves no more: let go, and look again
    if (json === "") {
      await this.release(rolloutId, target);
      return await this.claim(rolloutId, target, fanout);
    }
    return peerSourceSchema.parse(JSON.parse(json));
  }

  /** The target's copy ended (copied, or failed): its source's slot is free. */
  async release(rolloutId: string, target: string): Promise<void> {
    await this.redis.eval(RELEASE, 2, keys.peerLoad(rolloutId), keys.peerClaims(rolloutId), target);
  }

  /** Copies running now, by serving host (for the bench and the tests: no host over the fan-out). */
  async load(rolloutId: string): Promise<Record<string, number>> {
    const all = await this.redis.hgetall(keys.peerLoad(rolloutId));
    return Object.fromEntries(Object.entries(all).map(([h, n]) => [h, Number(n)]));
  }
}
