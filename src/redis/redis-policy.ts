import type { Logger } from "../log.ts";
import { type RedisClient, slotOwner } from "./redis-client.ts";

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
export async function readRedisPolicy(client: RedisClient): Promise<RedisPolicy | { refused: string }> {
  // on a Cluster, CONFIG and INFO go to a random node: read the one that holds modelswap's keys
  const redis = await slotOwner(client);
  if (redis === undefined)
    return { refused: "the Redis Cluster does not know which node holds modelswap's slot yet" };
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

/** A Redis setting that can lose modelswap's state: its code, what is wrong, and the fix. */
export interface RedisPolicyProblem {
  code: "REDIS_EVICTION_POLICY" | "REDIS_AOF_OFF" | "REDIS_POLICY_UNCHECKED";
  message: string;
  fix: string;
}

const UNCHECKED_FIX =
  "make sure it runs with maxmemory-policy noeviction and appendonly yes (see docs/redis.md)";

/**
 * What is wrong with the settings Redis reported: an eviction policy other than noeviction (an evicted
 * key is a lost job, lock or swap record; BullMQ requires noeviction), AOF off (a restart loses every
 * queued swap since the last snapshot), or a setting it did not report. The start-up warning and
 * `modelswap doctor` both say these, in these words.
 */
export function redisPolicyProblems(policy: RedisPolicy | { refused: string }): RedisPolicyProblem[] {
  if ("refused" in policy) {
    return [
      {
        code: "REDIS_POLICY_UNCHECKED",
        message: "Redis refused CONFIG GET and INFO, so modelswap could not check its settings",
        fix: UNCHECKED_FIX,
      },
    ];
  }
  const problems: RedisPolicyProblem[] = [];
  if (policy.maxmemoryPolicy !== undefined && policy.maxmemoryPolicy !== "noeviction") {
    problems.push({
      code: "REDIS_EVICTION_POLICY",
      message: `Redis runs with maxmemory-policy ${policy.maxmemoryPolicy}: when it fills up it evicts keys, and an evicted key is a lost job, lock or swap record`,
      fix: EVICTION_FIX,
    });
  }
  if (policy.appendonly === "no") {
    problems.push({
      code: "REDIS_AOF_OFF",
      message:
        "Redis runs without its append-only file (appendonly no): a Redis crash or restart loses queued swaps and everything written since the last snapshot",
      fix: AOF_FIX,
    });
  }
  if (policy.maxmemoryPolicy === undefined || policy.appendonly === undefined) {
    problems.push({
      code: "REDIS_POLICY_UNCHECKED",
      message: "Redis did not report maxmemory-policy or appendonly",
      fix: UNCHECKED_FIX,
    });
  }
  return problems;
}

/**
 * Warns, with a code and the fix, when Redis could silently lose modelswap's state (redisPolicyProblems).
 * Returns what it found.
 */
export async function checkRedisPolicy(
  redis: RedisClient,
  log: Logger,
): Promise<RedisPolicy | { refused: string }> {
  const policy = await readRedisPolicy(redis);
  const problems = redisPolicyProblems(policy);
  for (const problem of problems) {
    if (problem.code === "REDIS_POLICY_UNCHECKED") {
      const detail = "refused" in policy ? { reason: policy.refused } : { source: policy.source };
      log.info({ code: problem.code, ...detail }, `${problem.message}: ${problem.fix}`);
      continue;
    }
    const detail =
      problem.code === "REDIS_EVICTION_POLICY"
        ? { maxmemoryPolicy: (policy as RedisPolicy).maxmemoryPolicy }
        : { appendonly: "no" };
    log.warn({ code: problem.code, ...detail, fix: problem.fix }, `${problem.message}. Fix: ${problem.fix}`);
  }
  if (problems.length === 0 && !("refused" in policy)) {
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
export function watchRedisPolicy(redis: RedisClient, log: Logger): void {
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
