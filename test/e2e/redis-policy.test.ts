import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkRedisPolicy } from "../../src/redis/redis-policy.ts";
import { type Bench, startBench } from "../../testbench/bench.ts";
import { logLines } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";
import { captureLog } from "../support/log-capture.ts";

/**
 * The bot checks at start that Redis will keep what it writes (maxmemory-policy noeviction, AOF on) and
 * says what to fix when it will not. Each case starts the real `modelswap start` as a child process
 * against the bench's real redis-server, reconfigured at runtime with CONFIG SET and ACL SETUSER.
 */
let bench: Bench;
let admin: Redis;

interface LogLine {
  level: number;
  msg: string;
  code?: string;
  fix?: string;
  [field: string]: unknown;
}

const WARN = 40;
const GOOD = "Redis keeps what modelswap writes";

beforeAll(async () => {
  bench = await startBench({ hosts: [{ name: "gpu-1", serving: false }] });
  admin = new Redis(bench.redis.url);
}, 60_000);

afterAll(async () => {
  admin?.disconnect();
  await bench?.stop();
});

/** Starts `modelswap start`, waits until it has logged a line that passes `awaited`, stops it; its log lines. */
async function startLog(awaited: (line: LogLine) => boolean): Promise<LogLine[]> {
  const bot = await bench.spawnBot();
  let lines: LogLine[] = [];
  try {
    return await until(
      async () => {
        lines = parse((await logLines(bot.logPath)).join("\n"));
        return lines.some(awaited) && lines;
      },
      { what: "the line awaited", timeoutMs: 15_000, intervalMs: 100 },
    );
  } catch (error) {
    throw new Error(`${(error as Error).message}; the bot logged:\n${lines.map((l) => l.msg).join("\n")}`);
  } finally {
    await bot.kill("SIGTERM");
  }
}

function parse(text: string): LogLine[] {
  return text
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as LogLine);
}

const coded = (code: string) => (line: LogLine) => line.code === code;

describe("the Redis settings check at start", () => {
  it("stays quiet (one info line) when Redis runs with noeviction and AOF", async () => {
    const lines = await startLog((line) => line.msg.startsWith(GOOD));
    expect(
      lines.filter((line) => line.level >= WARN && String(line.code ?? "").startsWith("REDIS_")),
    ).toEqual([]);
  });

  it("warns with a code and the fix when Redis may evict keys or runs without AOF", async () => {
    await admin.config("SET", "maxmemory-policy", "allkeys-lru");
    await admin.config("SET", "appendonly", "no");
    try {
      const lines = await startLog(coded("REDIS_AOF_OFF"));
      const eviction = lines.find(coded("REDIS_EVICTION_POLICY"));
      expect(eviction).toMatchObject({ level: WARN, maxmemoryPolicy: "allkeys-lru" });
      expect(eviction?.msg).toContain("maxmemory-policy allkeys-lru");
      expect(eviction?.fix).toContain("maxmemory-policy noeviction");
      const aof = lines.find(coded("REDIS_AOF_OFF"));
      expect(aof).toMatchObject({ level: WARN });
      expect(aof?.msg).toContain("a Redis crash or restart loses queued swaps");
      expect(aof?.fix).toContain("appendonly yes");
      expect(lines.some((line) => line.msg.startsWith(GOOD))).toBe(false);
    } finally {
      await admin.config("SET", "maxmemory-policy", "noeviction");
      await admin.config("SET", "appendonly", "yes");
    }
  });

  it("still warns when CONFIG is refused, as on managed Redis, by reading INFO instead", async () => {
    await admin.config("SET", "maxmemory-policy", "volatile-lru");
    await admin.acl("SETUSER", "default", "-config");
    try {
      await expect(admin.config("GET", "maxmemory-policy")).rejects.toThrow(/NOPERM/);
      const lines = await startLog(coded("REDIS_EVICTION_POLICY"));
      expect(lines.find(coded("REDIS_EVICTION_POLICY"))).toMatchObject({
        level: WARN,
        maxmemoryPolicy: "volatile-lru",
      });
      expect(lines.some(coded("REDIS_AOF_OFF"))).toBe(false);
    } finally {
      await admin.acl("SETUSER", "default", "+config");
      await admin.config("SET", "maxmemory-policy", "noeviction");
    }
  });

  it("says at info what must be set when Redis refuses both CONFIG and INFO", async () => {
    await admin.acl(
      "SETUSER",
      "locked-down",
      "on",
      ">locked-down-pw",
      "~*",
      "&*",
      "+@all",
      "-config",
      "-info",
    );
    const limited = new Redis(bench.redis.url, { username: "locked-down", password: "locked-down-pw" });
    const { log, lines: logged } = captureLog<LogLine>();
    try {
      const result = await checkRedisPolicy(limited, log);
      expect(result).toHaveProperty("refused");
      const lines = logged();
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({ level: 30, code: "REDIS_POLICY_UNCHECKED" });
      expect(lines[0]?.msg).toContain(
        "make sure it runs with maxmemory-policy noeviction and appendonly yes",
      );
    } finally {
      limited.disconnect();
      await admin.acl("DELUSER", "locked-down");
    }
  });
});
