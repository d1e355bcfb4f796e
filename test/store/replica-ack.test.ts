import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.ts";
import { keys } from "../../src/store/keys.ts";
import { ReplicaAck } from "../../src/store/replica-ack.ts";
import { Store } from "../../src/store/store.ts";
import { type BenchRedis, startRedis } from "../../testbench/redis.ts";
import { until } from "../../testbench/until.ts";
import { tempDir } from "../support/tmp.ts";

/**
 * Writes that decide who touches a host wait for a replica (WAIT 1) on a real redis-server master with a
 * real replica: nothing is asked of a Redis without replicas; with one, the lock is on the replica when
 * lockHost returns; a replica that stops reading (SIGSTOP) costs one timeout, is said once with its code,
 * and does not slow the writes after it.
 */
let dir: { path: string; remove: () => Promise<void> };
let lone: BenchRedis;
let primary: BenchRedis;
let replica: BenchRedis;
const clients: Redis[] = [];
const client = (server: BenchRedis) => {
  const redis = new Redis(server.url, { maxRetriesPerRequest: null });
  clients.push(redis);
  return redis;
};

/** How many WAIT commands a server has run (INFO commandstats). */
async function waits(server: BenchRedis): Promise<number> {
  const stats = await client(server).info("commandstats");
  return Number(/^cmdstat_wait:calls=(\d+)/m.exec(stats)?.[1] ?? "0");
}

function capture() {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({
    level: "debug",
    destination: { write: (l: string) => lines.push(JSON.parse(l)) },
  });
  return { log, lines };
}

beforeAll(async () => {
  dir = await tempDir();
  [lone, primary] = await Promise.all([
    startRedis(join(dir.path, "lone")),
    startRedis(join(dir.path, "primary")),
  ]);
  replica = await startRedis(join(dir.path, "replica"), { replicaOf: primary.port });
  await until(async () => /^master_link_status:up/m.test(await client(replica).info("replication")), {
    what: "the replica's link to the primary",
  });
});

afterAll(async () => {
  for (const c of clients) c.disconnect();
  replica?.resume();
  await Promise.all([lone?.stop(), replica?.stop(), primary?.stop()]);
  await dir?.remove();
});

describe("a write confirmed by a replica", () => {
  it("asks nothing of a Redis without replicas", async () => {
    const { log, lines } = capture();
    const store = new Store(client(lone), { log });
    expect(await store.locks.lockHost("gpu-1", "sw-lone")).toEqual({ ok: true });
    expect(await store.replicas.confirm("a test write")).toEqual({ replicas: 0, acked: 0 });
    expect(await waits(lone)).toBe(0);
    expect(lines.filter((l) => l.code === "REDIS_REPLICA_LAGGING")).toEqual([]);
  });

  it("holds lockHost and takeLease until the replica has the key", async () => {
    const store = new Store(client(primary));
    const before = await waits(primary);
    expect(await store.locks.lockHost("gpu-1", "sw-repl")).toEqual({ ok: true });
    expect(await store.locks.takeLease("sw-repl", "token", 60_000)).toBeGreaterThan(0);
    // WAIT returned: the replica has both already, no polling needed
    const onReplica = client(replica);
    expect(await onReplica.get(keys.hostLock("gpu-1"))).toBe("sw-repl");
    expect(await onReplica.get(keys.swapLease("sw-repl"))).toBe("token");
    expect(await waits(primary)).toBe(before + 2);
    expect(await store.replicas.confirm("a test write")).toEqual({ replicas: 1, acked: 1 });
  });

  it("goes on after one timeout when the replica stops reading, says so once, and the write reaches the replica once it reads again", async () => {
    const { log, lines } = capture();
    const writer = client(primary);
    const acks = new ReplicaAck(writer, log, 300);
    expect(await acks.confirm("the first write")).toEqual({ replicas: 1, acked: 1 });
    replica.pause();
    try {
      await writer.set("{modelswap}:test:unreplicated", "1");
      const started = Date.now();
      expect(await acks.confirm("swap sw-x's record (step switch)")).toEqual({ replicas: 1, acked: 0 });
      expect(Date.now() - started).toBeGreaterThanOrEqual(290);
      const waited = await waits(primary);
      // the writes after it do not wait again while the replica is behind
      for (let i = 0; i < 5; i += 1) expect((await acks.confirm(`write ${i}`)).acked).toBe(0);
      expect(await waits(primary)).toBe(waited);
      const warnings = lines.filter((l) => l.code === "REDIS_REPLICA_LAGGING");
      expect(warnings).toHaveLength(1);
      expect(warnings[0]?.msg).toContain(
        "no Redis replica confirmed swap sw-x's record (step switch) within 300 ms",
      );
      expect(warnings[0]?.msg).toContain("Fix: check the replicas' link");
    } finally {
      replica.resume();
    }
    // a fresh ReplicaAck (a process started later) finds the replica caught up
    expect(await new ReplicaAck(writer, log, 300).confirm("a write after")).toEqual({
      replicas: 1,
      acked: 1,
    });
    expect(await client(replica).get("{modelswap}:test:unreplicated")).toBe("1");
  });
});
