import type { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.ts";
import { keys, STORE_VERSION } from "../../src/store/keys.ts";
import { migrateStore } from "../../src/store/migrate.ts";
import { Store } from "../../src/store/store.ts";
import { newStages } from "../../src/swap/swap-record.ts";
import { useRedisServer } from "../support/redis-server.ts";

/**
 * A deployment of the version before the store (keys straight under the hash tag, some inside the
 * queues' namespaces; whole Hub config files in the records; the card's ts in the record) upgraded on a
 * real redis-server: every piece of state is where this version reads it, parsed by its schema, and
 * nothing is left under the old names. Run twice, it changes nothing the second time.
 */
let redis: Redis;
const log = createLogger({ level: "silent" });

const OLD = "{modelswap}";
const ID = "sw-mx2i7lz1-34a1fc";
const ACTIVE = "sw-mx2i9aaa-00ff00";
const DRY = "sw-mx2iaaaa-00d001";
const OLD_DRY = "sw-mx2iaaab-00d002";
/** The retention the config asks for (not the defaults, so the migration is seen to use it). */
const retention = { finishedDays: 30, dryRunHours: 6 };
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** v1 records' finish times, before the test's run: retention counts from when a swap finished. */
const finished = (agoMs: number) => new Date(Date.now() - agoMs).toISOString();
const now = new Date("2026-11-20T10:00:00.000Z").toISOString();
const model = {
  repo: "nvidia/Qwen3.5-397B-A17B-NVFP4",
  revision: "main",
  sha: "43da92d546abdfe33cded301c28224a774a893b9",
  files: [{ path: "model-00001-of-00019.safetensors", size: 1000, sha256: "a".repeat(64) }],
  totalBytes: 1000,
  weightBytes: 1000,
  gated: false,
  license: null,
  // what made a v1 record 16 MB: the Hub's files, twice (here small, but there)
  config: { architectures: ["Qwen3_5MoeForConditionalGeneration"], huge: "x".repeat(10_000) },
  quantConfig: { quant_algo: "NVFP4" },
};
const facts = {
  family: "qwen3.5-moe",
  architecture: "Qwen3_5MoeForConditionalGeneration",
  quantization: "nvfp4",
  attentionHeads: 32,
  kvHeads: 2,
  layers: 60,
  hiddenSize: 4096,
  headDim: 128,
  experts: 512,
  maxContext: 262144,
  weightBytes: 1000,
  needsRemoteCode: false,
};
const plan = {
  model,
  facts,
  host: {
    host: "gpu-1",
    gpus: [],
    freeDiskBytes: 1,
    bytesOnDisk: 0,
    memoryBytes: 1,
    venvOk: true,
    hubCli: "hf",
    currentUnit: { name: "sglang-old.service", exists: true, active: true, text: "", execStart: [] },
  },
  recipe: "qwen3.5-moe/nvfp4/sm_120",
  tp: 8,
  tpReason: "all 8",
  flags: [],
  checks: [],
  ok: true,
  modelDir: "/srv/models/x",
  unitName: "sglang-qwen.service",
  unitText: "[Unit]\n",
  unitDiff: "",
  expectedDowntimeSeconds: 120,
  healthTimeoutSeconds: 900,
  swapId: ID,
  venv: "/srv/venv",
  unitDir: "/etc/systemd/system",
  unitPath: "/etc/systemd/system/sglang-qwen.service",
  notes: [],
};
const v1Record = (id: string, over: Record<string, unknown>) => ({
  id,
  host: "gpu-1",
  requester: "U0ALICE001",
  channel: "C0LLMOPS01",
  createdAt: now,
  request: { model: { repo: model.repo, revision: "main" }, host: "gpu-1", dryRun: false, engineRef: "main" },
  step: "done",
  stages: newStages(),
  tasks: {},
  model,
  plan: { ...plan, swapId: id },
  planHash: "0123456789abcdef",
  cardTs: "1763632800.000100",
  planTs: "1763632801.000200",
  lastCardUpdate: now,
  ...over,
});

useRedisServer(async (client) => {
  redis = client;
  const created = Date.parse(now);
  await redis
    .multi()
    .set(
      `${OLD}:swap:${ID}`,
      JSON.stringify(
        v1Record(ID, {
          outcome: "succeeded",
          finishedAt: finished(10 * DAY),
          previous: { unit: "sglang-old.service" },
        }),
      ),
    )
    // dry runs: one finished two hours ago, one three days ago (past its 6 h: it goes)
    .set(
      `${OLD}:swap:${DRY}`,
      JSON.stringify(v1Record(DRY, { outcome: "planned", finishedAt: finished(2 * HOUR), planHash: "d1" })),
    )
    .set(
      `${OLD}:swap:${OLD_DRY}`,
      JSON.stringify(
        v1Record(OLD_DRY, { outcome: "planned", finishedAt: finished(3 * DAY), planHash: "d2" }),
      ),
    )
    .set(
      `${OLD}:swap:${ACTIVE}`,
      JSON.stringify(
        v1Record(ACTIVE, {
          step: "prepare",
          approvalExpiresAt: "2026-11-20T14:00:00.000Z",
          planHash: "fedcba9876543210",
        }),
      ),
    )
    .zadd(`${OLD}:swaps`, created, ID, created + 1, ACTIVE, created + 2, DRY, created + 3, OLD_DRY)
    .zadd(`${OLD}:swaps:host:gpu-1`, created, ID, created + 1, ACTIVE, created + 2, DRY, created + 3, OLD_DRY)
    .set(`${OLD}:lock:host:gpu-1`, ACTIVE)
    .set(`${OLD}:lease:swap:${ACTIVE}`, "token", "PX", 60_000)
    .set(
      `${OLD}:decision:${ID}:0123456789abcdef`,
      JSON.stringify({
        approved: true,
        by: "U0BOB00001",
        at: now,
        planHash: "0123456789abcdef",
        via: "reaction",
      }),
    )
    .set(`${OLD}:planmsg:C0LLMOPS01:1763632801.000200`, ID)
    .set(
      `${OLD}:host:gpu-1:serving`,
      JSON.stringify({ unit: "sglang-qwen.service", repo: model.repo, since: now, swapId: ID }),
    )
    .set(
      `${OLD}:host:gpu-1:benchmark`,
      JSON.stringify({ repo: model.repo, result: { single: { raw: {} }, loaded: { raw: {} } } }),
    )
    .set(`${OLD}:cancel:${ACTIVE}`, JSON.stringify({ by: "U0ALICE001", at: now }))
    .set(`${OLD}:event:Ev0123`, "handled", "EX", 3600)
    .xadd(`${OLD}:audit`, "*", "at", now, "kind", "request", "who", "U0ALICE001", "detail", "x")
    .hset(`${OLD}:metrics:swaps`, JSON.stringify(["swaps", "gpu-1", "succeeded"]), "1")
    .sadd(`${OLD}:metrics:swaps:tallied`, ID)
    .hset(`${OLD}:monitor:host:gpu-1`, "failures", "0", "passes", "3")
    // BullMQ's own keys under the queues' names stay as they are
    .hset(`${OLD}:swaps:${ID}`, "name", "swap")
    .exec();
});

describe("migrating a deployment from before the store", () => {
  it("moves every key under {modelswap}:store:, with records that parse and lose the Hub's files", async () => {
    const store = new Store(redis, { retention });
    const result = await migrateStore(store, log, () => "sglang");
    expect(result).toMatchObject({ from: 0, to: STORE_VERSION, invalid: [], expired: [OLD_DRY] });
    expect(result.migrated).toBeGreaterThan(10);

    const done = await store.swaps.get(ID);
    expect(done?.outcome).toBe("succeeded");
    expect(JSON.stringify(done)).not.toContain("huge");
    expect(done?.facts?.quantization).toBe("nvfp4");
    const active = await store.swaps.get(ACTIVE);
    expect(active?.approval?.expiresAt).toBe("2026-11-20T14:00:00.000Z");
    expect(await store.reports.get(ID)).toMatchObject({
      cardTs: "1763632800.000100",
      plans: { "0123456789abcdef": "1763632801.000200" },
    });
    expect((await store.swaps.history({ host: "gpu-1", limit: 10 })).records.map((r) => r.id)).toEqual([
      DRY,
      ACTIVE,
      ID,
    ]);
    expect(await store.locks.hostHolder("gpu-1")).toBe(ACTIVE);
    expect(await store.approvals.decision(ID, "0123456789abcdef")).toMatchObject({ by: "U0BOB00001" });
    expect(await store.approvals.planMessage("C0LLMOPS01", "1763632801.000200")).toEqual({
      swapId: ID,
      planHash: "0123456789abcdef",
    });
    expect(await store.approvals.cancelRequest(ACTIVE)).toMatchObject({ by: "U0ALICE001" });
    // what /llm rollback goes back to now lives with what the host serves
    expect(await store.hosts.serving("gpu-1")).toMatchObject({
      swapId: ID,
      previous: { unit: "sglang-old.service" },
    });
    expect(await store.hosts.lastBenchmark("gpu-1")).toMatchObject({ repo: model.repo });
    expect(await store.audit.length()).toBe(1);
    expect(await redis.hget(keys.tally, JSON.stringify(["swaps", "gpu-1", "succeeded"]))).toBe("1");
    expect((await store.incidents.state("gpu-1")).passes).toBe(3);

    const left = (await redis.keys(`${OLD}:*`)).filter((k) => !k.startsWith(`${OLD}:store:`)).sort();
    expect(left).toEqual([`${OLD}:swaps:${ID}`]);
  });

  it("gives migrated records the retention of new ones, counted from when they finished", async () => {
    // the v1 records that filled Redis never expired; now a finished swap's keys go 30 days after it
    // finished (20 days from now), a dry run's 6 hours after (4 from now); a running one's stay
    const near = (ttl: number, expected: number) => {
      expect(ttl).toBeGreaterThan(expected - 5 * 60_000);
      expect(ttl).toBeLessThanOrEqual(expected);
    };
    for (const key of [keys.swap(ID), keys.swapReport(ID), keys.decisions(ID)])
      near(await redis.pttl(key), 20 * DAY);
    near(await redis.pttl(keys.swap(DRY)), 4 * HOUR);
    expect(await redis.pttl(keys.swap(ACTIVE))).toBe(-1);
    expect(await redis.pttl(keys.swapCancel(ACTIVE))).toBe(-1);
    // the dry run past its retention is gone, from the ledger too
    expect(await redis.exists(keys.swap(OLD_DRY), keys.swapReport(OLD_DRY))).toBe(0);
    expect(await redis.zscore(keys.ledger, OLD_DRY)).toBeNull();
    expect(await redis.zscore(keys.hostLedger("gpu-1"), OLD_DRY)).toBeNull();
  });

  it("does nothing the second time, and nothing on a deployment already at this version", async () => {
    const before = (await redis.keys("*")).sort();
    expect(await migrateStore(new Store(redis, { retention }), log, () => "sglang")).toMatchObject({
      migrated: 0,
    });
    expect((await redis.keys("*")).sort()).toEqual(before);
  });
});
