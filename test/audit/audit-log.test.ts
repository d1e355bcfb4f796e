import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { AUDIT_STREAM, AuditLog, MAX_DETAIL_CHARS } from "../../src/store/audit-log.ts";
import { type BenchRedis, startRedis } from "../../testbench/redis.ts";

/** The audit stream against a real redis-server (AOF on, as in production). */
let dir: string;
let server: BenchRedis;
let redis: Redis;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "modelswap-audit-"));
  server = await startRedis(dir);
  redis = new Redis(server.url);
});

afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

beforeEach(async () => {
  await redis.del(AUDIT_STREAM);
});

describe("AuditLog", () => {
  it("appends events with who and when, and reads them back newest first, by host or by swap", async () => {
    const audit = new AuditLog(redis);
    await audit.record({ kind: "request", who: "U0ALICE001", host: "gpu-1", swap: "sw-1", detail: "org/a" });
    await audit.record({ kind: "approval", who: "U0BOB00001", host: "gpu-1", swap: "sw-1", detail: "ok" });
    await audit.record({ kind: "alert", who: "modelswap", host: "gpu-2", detail: "health failed 3 times" });
    await audit.record({
      at: "2026-01-01T00:00:00.000Z",
      kind: "stage",
      who: "modelswap",
      host: "gpu-1",
      swap: "sw-1",
      stage: "switch",
      detail: "switch done",
    });

    const all = await audit.read({ limit: 10 });
    expect(all.map((e) => e.kind)).toEqual(["stage", "alert", "approval", "request"]);
    expect(all[0]).toMatchObject({ at: "2026-01-01T00:00:00.000Z", stage: "switch", swap: "sw-1" });
    expect(all[3]).toMatchObject({ who: "U0ALICE001", host: "gpu-1", detail: "org/a" });
    expect(Number.isNaN(Date.parse(all[3]!.at))).toBe(false);
    expect(all[1]).not.toHaveProperty("swap");

    expect((await audit.read({ host: "gpu-2", limit: 10 })).map((e) => e.kind)).toEqual(["alert"]);
    expect((await audit.read({ swap: "sw-1", limit: 2 })).map((e) => e.kind)).toEqual(["stage", "approval"]);
    expect(await audit.read({ swap: "sw-404", limit: 5 })).toEqual([]);
    // every value in Redis is a plain string field of the stream entry
    const [first] = await redis.xrange(AUDIT_STREAM, "-", "+", "COUNT", 1);
    expect(first?.[1]).toEqual([
      "at",
      expect.any(String),
      "kind",
      "request",
      "who",
      "U0ALICE001",
      "host",
      "gpu-1",
      "swap",
      "sw-1",
      "detail",
      "org/a",
    ]);
  });

  it("finds a swap's events deep in a long stream (reads page by page)", async () => {
    const audit = new AuditLog(redis);
    await audit.record({ kind: "request", who: "U0ALICE001", host: "gpu-1", swap: "sw-old", detail: "old" });
    const pipeline = redis.pipeline();
    for (let i = 0; i < 1200; i++)
      pipeline.xadd(
        AUDIT_STREAM,
        "*",
        "at",
        new Date().toISOString(),
        "kind",
        "stage",
        "who",
        "modelswap",
        "swap",
        `sw-${i}`,
        "detail",
        "x",
      );
    await pipeline.exec();
    const found = await audit.read({ swap: "sw-old", limit: 5 });
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ kind: "request", detail: "old" });
  });

  it("never stores a secret, nor an unbounded detail", async () => {
    const token = "xoxb-1234567890-secret";
    const audit = new AuditLog(redis, { secrets: [token] });
    await audit.record({
      kind: "stage",
      who: "modelswap",
      swap: "sw-1",
      detail: `build failed: curl -H 'Authorization: Bearer ${token}' …\n${"y".repeat(5000)}`,
    });
    const raw = JSON.stringify(await redis.xrange(AUDIT_STREAM, "-", "+"));
    expect(raw).not.toContain(token);
    expect(raw).toContain("[redacted]");
    const [event] = await audit.read({ limit: 1 });
    expect(event!.detail.length).toBeLessThanOrEqual(MAX_DETAIL_CHARS);
    expect(event!.detail.endsWith("…")).toBe(true);
  });

  it("keeps every event up to maxEntries and trims only older ones beyond it", async () => {
    const audit = new AuditLog(redis, { maxEntries: 1000 });
    expect(new AuditLog(redis).maxEntries).toBe(1_000_000);
    for (let i = 0; i < 1000; i++) await audit.record({ kind: "stage", who: "modelswap", detail: `e${i}` });
    expect(await audit.length()).toBe(1000);
    for (let i = 1000; i < 3000; i++)
      await audit.record({ kind: "stage", who: "modelswap", detail: `e${i}` });
    const length = await audit.length();
    // MAXLEN ~ trims whole stream nodes: never below the limit, never far above it
    expect(length).toBeGreaterThanOrEqual(1000);
    expect(length).toBeLessThan(1300);
    const [newest] = await audit.read({ limit: 1 });
    expect(newest!.detail).toBe("e2999");
  });
});
