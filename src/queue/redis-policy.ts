import type { Redis } from "ioredis";
import type { Logger } from "../log.ts";

/** The two Redis settings modelswap depends on, as the server reports them. */
export interface RedisPolicy {
  maxmemoryPolicy: string | undefined;
  /** `yes` or `no`. */
  appendonly: string | undefined;
  /** Where they were read: CONFIG GET, or INFO when CONFIG is refused (managed Redis often renames it). */
  source: "config" | "info";
}

const EVICTION_FIX =
  "set maxmemory-policy noeviction in redis.conf (or `redis-cli CONFIG SET maxmemory-policy noeviction` and `CONFIG REWRITE`; on managed Redis, in its parameter group); see docs/redis.md";
const AOF_FIX =
  "set appendonly yes and appendfsync everysec in redis.conf (or `redis-cli CONFIG SET appendonly yes` and `CONFIG REWRITE`); see docs/redis.md";

/** Reads maxmemory-policy and appendonly, or says why the server would not tell (CONFIG and INFO refused). */
export async function readRedisPolicy(redis: Redis): Promise<RedisPolicy | { refused: string }> {
  try {
    const pairs = (await redis.config("GET", "maxmemory-policy", "appendonly")) as string[];
    const value = (name: string) => pairs[pairs.indexOf(name) + 1];
    return { maxmemoryPolicy: value("maxmemory-policy"), appendonly: value("appendonly"), source: "config" };
  } catch (configError) {
    try {
      const info = `${await redis.info("memory")}\n${await redis.info("persistence")}`;
      const field = (name: string) => new RegExp(`^${name}:(.*)$`, "m").exec(info)?.[1]?.trim();
      const aof = field("aof_enabled");
      return {
        maxmemoryPolicy: field("maxmemory_policy"),
        appendonly: aof === undefined ? undefined : aof === "1" ? "yes" : "no",
        source: "info",
      };
    } catch (infoError) {
      return { refused: `${message(configError)}; ${message(infoError)}` };
    }
  }
}

/**
 * Warns, with a code and the fix, when Redis could silently lose modelswap's state: an eviction policy
 * other than noeviction (an evicted key is a lost job, lock or swap record; BullMQ requires noeviction),
 * or AOF off (a restart loses every queued swap since the last snapshot). Returns what it found.
 */
export async function checkRedisPolicy(
  redis: Redis,
  log: Logger,
): Promise<RedisPolicy | { refused: string }> {
  const policy = await readRedisPolicy(redis);
  if ("refused" in policy) {
    log.info(
      { code: "REDIS_POLICY_UNCHECKED", reason: policy.refused },
      "Redis refused CONFIG GET and INFO, so modelswap could not check its settings: make sure it runs with maxmemory-policy noeviction and appendonly yes (see docs/redis.md)",
    );
    return policy;
  }
  let fine = true;
  if (policy.maxmemoryPolicy !== undefined && policy.maxmemoryPolicy !== "noeviction") {
    fine = false;
    log.warn(
      { code: "REDIS_EVICTION_POLICY", maxmemoryPolicy: policy.maxmemoryPolicy, fix: EVICTION_FIX },
      `Redis runs with maxmemory-policy ${policy.maxmemoryPolicy}: when it fills up it evicts keys, and an evicted key is a lost job, lock or swap record. Fix: ${EVICTION_FIX}`,
    );
  }
  if (policy.appendonly === "no") {
    fine = false;
    log.warn(
      { code: "REDIS_AOF_OFF", appendonly: "no", fix: AOF_FIX },
      `Redis runs without its append-only file (appendonly no): a Redis crash or restart loses queued swaps and everything written since the last snapshot. Fix: ${AOF_FIX}`,
    );
  }
  if (policy.maxmemoryPolicy === undefined || policy.appendonly === undefined) {
    fine = false;
    log.info(
      { code: "REDIS_POLICY_UNCHECKED", source: policy.source },
      "Redis did not report maxmemory-policy or appendonly: make sure it runs with maxmemory-policy noeviction and appendonly yes (see docs/redis.md)",
    );
  }
  if (fine) {
    log.info(
      { maxmemoryPolicy: policy.maxmemoryPolicy, appendonly: policy.appendonly, source: policy.source },
      "Redis keeps what modelswap writes: maxmemory-policy noeviction, appendonly yes",
    );
  }
  return policy;
}

/**
 * Checks at every (re)connect: a Redis restarted without its config file comes back with eviction
 * allowed and AOF off, and that deserves the same warning as a bad start.
 */
export function watchRedisPolicy(redis: Redis, log: Logger): void {
  const check = () => {
    checkRedisPolicy(redis, log).catch((error: unknown) => {
      if (redis.status === "end") return; // stopped while checking: nothing to say
      log.info(
        { code: "REDIS_POLICY_UNCHECKED", reason: message(error) },
        "could not check Redis's maxmemory-policy and appendonly: make sure it runs with noeviction and appendonly yes (see docs/redis.md)",
      );
    });
  };
  redis.on("ready", check);
  if (redis.status === "ready") check();
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
