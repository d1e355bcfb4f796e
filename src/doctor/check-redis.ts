import { isCluster, MODELSWAP_SLOT, requireSlotOwner } from "../redis/redis-client.ts";
import type { RedisEnv } from "../redis/redis-connection.ts";
import { createRedis, describeRedis, waitReady } from "../redis/redis-connection.ts";
import { readRedisPolicy, redisPolicyProblems } from "../redis/redis-policy.ts";
import { type DoctorRow, pass, problem } from "./doctor-row.ts";

const TARGET = "Redis";

/**
 * `modelswap doctor`'s Redis rows: the connection the bot would open (REDIS_URL, or the master the
 * Sentinels name), a PING, and the settings the start-up warning checks (maxmemory-policy noeviction,
 * appendonly yes: redisPolicyProblems, the same words and fixes).
 */
export async function checkRedis(env: RedisEnv, timeoutMs: number): Promise<DoctorRow[]> {
  const where = describeRedis(env);
  const redis = createRedis(env, "producer");
  let lastError = "";
  redis.on("error", (error: Error) => {
    lastError = error.message;
  });
  try {
    const up = await waitReady(redis, timeoutMs);
    if (!up) {
      return [
        problem(
          "fail",
          TARGET,
          "reachable",
          `${where}: no connection within ${Math.round(timeoutMs / 1000)} s${lastError === "" ? "" : ` (${lastError})`}`,
          "REDIS_UNREACHABLE",
          unreachableFix(env),
        ),
      ];
    }
    const started = Date.now();
    // on a Cluster, the node that holds modelswap's slot: that is the one that must answer
    const node = await requireSlotOwner(redis);
    await node.ping();
    const version = /^redis_version:(.*)$/m.exec(await node.info("server").catch(() => ""))?.[1]?.trim();
    const slot = isCluster(redis)
      ? ` (slot ${MODELSWAP_SLOT} on ${node.options.host}:${node.options.port})`
      : "";
    const rows = [
      pass(
        TARGET,
        "reachable",
        `${where}${slot}: PONG in ${Date.now() - started} ms${version === undefined ? "" : `, Redis ${version}`}`,
      ),
    ];
    const policy = await readRedisPolicy(redis);
    const problems = redisPolicyProblems(policy);
    const of = (code: string) => problems.find((p) => p.code === code);
    const unchecked = of("REDIS_POLICY_UNCHECKED");
    if (unchecked !== undefined)
      rows.push(problem("warn", TARGET, "settings", unchecked.message, unchecked.code, unchecked.fix));
    if ("refused" in policy) return rows;
    const eviction = of("REDIS_EVICTION_POLICY");
    if (eviction !== undefined)
      rows.push(problem("fail", TARGET, "eviction", eviction.message, eviction.code, eviction.fix));
    else if (policy.maxmemoryPolicy !== undefined)
      rows.push(pass(TARGET, "eviction", `maxmemory-policy ${policy.maxmemoryPolicy}`));
    const aof = of("REDIS_AOF_OFF");
    if (aof !== undefined) rows.push(problem("fail", TARGET, "aof", aof.message, aof.code, aof.fix));
    else if (policy.appendonly !== undefined)
      rows.push(pass(TARGET, "aof", `appendonly ${policy.appendonly}`));
    return rows;
  } catch (error) {
    return [
      problem(
        "fail",
        TARGET,
        "reachable",
        `${where}: ${error instanceof Error ? error.message : String(error)}`,
        "REDIS_UNREACHABLE",
        "check that Redis answers there (redis-cli -u … PING) and that REDIS_PASSWORD is right; see docs/redis.md",
      ),
    ];
  } finally {
    redis.disconnect();
  }
}

function unreachableFix(env: RedisEnv): string {
  if (env.REDIS_CLUSTER_NODES !== undefined)
    return "check REDIS_CLUSTER_NODES and REDIS_PASSWORD, and that the cluster answers CLUSTER INFO with cluster_state:ok; see docs/redis.md";
  if (env.REDIS_SENTINELS !== undefined)
    return "check REDIS_SENTINELS, REDIS_SENTINEL_MASTER and the passwords, and that the sentinels know a master; see docs/redis.md";
  return "start Redis, or set REDIS_URL to where it listens (and REDIS_PASSWORD if it has one); see docs/redis.md";
}
