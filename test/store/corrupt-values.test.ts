import type { Redis } from "ioredis";
import { beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.ts";
import { AUDIT_STREAM } from "../../src/store/audit-log.ts";
import { keys } from "../../src/store/keys.ts";
import { Store } from "../../src/store/store.ts";
import { readSwapTally } from "../../src/store/swap-tally.ts";
import { useRedisServer } from "../support/redis-server.ts";

/**
 * Values in a real redis-server that no modelswap wrote (changed by hand, a restore gone wrong), read by
 * the parts that read them field by field — the health monitor's state of a host, the swap tally, the
 * audit stream: each bad value is logged with STORE_RECORD_INVALID and left out, never used as if it were
 * right; the good values beside it are still read.
 */
let redis: Redis;
let lines: Record<string, unknown>[] = [];
const log = createLogger({
  level: "info",
  destination: { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) },
});

useRedisServer((client) => {
  redis = client;
});

beforeEach(async () => {
  await redis.flushall();
  lines = [];
});

/** The log lines that report a corrupt value, as "what id: the error". */
const reported = () =>
  lines.filter((l) => l.code === "STORE_RECORD_INVALID").map((l) => `${l.what} ${l.id}: ${l.err}`);

describe("values in Redis that do not parse", () => {
  it("a host's health state: bad fields are reported and read as missing, the rest is kept", async () => {
    await redis.hset(keys.health("gpu-1"), {
      failures: "many",
      passes: "3",
      lastCheck: "1763632800000",
      lastResult: "bogus",
      lastDetail: "healthy",
      incSince: "yesterday",
      incFirst: "x",
      alertsPosted: "2",
    });
    const state = await new Store(redis, { log }).incidents.state("gpu-1");
    expect(state).toMatchObject({
      failures: 0,
      passes: 3,
      lastResult: undefined,
      lastDetail: "healthy",
      incident: undefined,
      alertsPosted: 2,
    });
    expect(state.lastCheck?.toISOString()).toBe("2025-11-20T10:00:00.000Z");
    const [line, ...more] = reported();
    expect(more).toEqual([]);
    expect(line).toMatch(/^health state of host gpu-1: /);
    for (const field of ["failures", "lastResult", "incSince"]) expect(line).toContain(field);
    expect(line).toContain("(STORE_RECORD_INVALID). Fix: ");
  });

  it("the swap tally: a field or value that does not parse is reported and never counted", async () => {
    await redis.hset(keys.tally, {
      "not json": "1",
      '["swaps","gpu-1"]': "4",
      '["swaps","gpu-1","succeeded"]': "lots",
      '["warp","gpu-1"]': "1",
      '["swaps","gpu-2","succeeded"]': "2",
      '["downtime_last","gpu-2"]': "41.5",
    });
    const tally = await readSwapTally(redis, log);
    expect(tally.swaps).toEqual([{ host: "gpu-2", outcome: "succeeded", count: 2 }]);
    expect([...tally.downtimeLast]).toEqual([["gpu-2", 41.5]]);
    expect(reported().map((r) => r.split(":")[0])).toEqual([
      "swap tally field not json",
      'swap tally field ["swaps","gpu-1"]',
      'swap tally field ["swaps","gpu-1","succeeded"]',
      'swap tally field ["warp","gpu-1"]',
    ]);
  });

  it("the audit stream: an entry that does not parse is reported and left out; a later kind is kept, typed apart", async () => {
    const at = "2026-11-20T10:00:00.000Z";
    const noKind = await redis.xadd(AUDIT_STREAM, "*", "at", at, "who", "U0ALICE001", "detail", "?");
    const badTime = await redis.xadd(
      AUDIT_STREAM,
      "*",
      ...["at", "yesterday", "kind", "request", "who", "U0ALICE001", "detail", "x"],
    );
    await redis.xadd(
      AUDIT_STREAM,
      "*",
      ...[
        "at",
        at,
        "kind",
        "quarantine",
        "who",
        "modelswap",
        "host",
        "gpu-1",
        "detail",
        "from a later version",
      ],
    );
    await redis.xadd(AUDIT_STREAM, "*", ...["at", at, "kind", "alert", "who", "modelswap", "detail", "down"]);
    const entries = await new Store(redis, { log }).audit.read({ limit: 10 });
    expect(entries.map((e) => e.kind)).toEqual(["alert", { unknown: "quarantine" }]);
    expect(entries[1]).toMatchObject({ host: "gpu-1", detail: "from a later version", at });
    const found = reported();
    expect(found).toHaveLength(2);
    expect(found[0]).toMatch(new RegExp(`^audit entry ${badTime}: .*at`));
    expect(found[1]).toMatch(new RegExp(`^audit entry ${noKind}: .*kind`));
  });
});
