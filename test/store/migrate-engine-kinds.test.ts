import type { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { engineOfHost } from "../../src/config/host-engines.ts";
import { createLogger } from "../../src/log.ts";
import { keys, STORE_VERSION } from "../../src/store/keys.ts";
import { migrateStore } from "../../src/store/migrate.ts";
import { Store } from "../../src/store/store.ts";
import { newStages } from "../../src/swap/swap-record.ts";
import { useRedisServer } from "../support/redis-server.ts";
import { qwenPlan } from "../unit/stages/late-stage-fixtures.ts";

/**
 * A version-2 deployment from before records named their engine (store migration v3), upgraded on a real
 * redis-server: every record reads back with its engine, as each field's documentation said an absent one
 * meant (a plan, a build, a benchmark: SGLang; what a host serves and what served before: the host's
 * configured engine), so no reader guesses any more; a record that names its engine keeps it; a second run
 * changes nothing.
 */
let redis: Redis;
const log = createLogger({ level: "silent" });
const now = "2026-11-20T10:00:00.000Z";
const OLD = "sw-mx2i7lz1-34a1fc";
const NAMED = "sw-mx2i9aaa-00ff00";
/** gpu-v's config names vLLM; gpu-1's names no engine (SGLang); gpu-gone is no longer configured. */
const hostEngine = engineOfHost([{ name: "gpu-v", engine: "vllm" }, { name: "gpu-1" }]);
const single = { raw: {} };

const record = (id: string, host: string, over: Record<string, unknown>) => ({
  id,
  host,
  requester: "U0ALICE001",
  channel: "C0LLMOPS01",
  createdAt: now,
  request: { model: { repo: "Qwen/Qwen3-8B", revision: "main" }, host, dryRun: false },
  step: "done",
  stages: newStages(),
  tasks: {},
  ...over,
});

useRedisServer(async (client) => {
  redis = client;
  const plan = qwenPlan();
  const { engineKind: _none, ...oldPlan } = plan;
  await redis
    .multi()
    .set(keys.version, "2")
    // a swap on the vLLM host from before the choice: its plan names no engine, nor does what it replaced
    .set(
      keys.swap(OLD),
      JSON.stringify(record(OLD, "gpu-v", { plan: oldPlan, previous: { unit: "vllm-old.service" } })),
      "PX",
      3_600_000,
    )
    .rpush(
      keys.swapEvents(OLD),
      JSON.stringify({ type: "downloaded", files: 1, bytes: 1, at: now }),
      JSON.stringify({ type: "built", commit: "0123456789ab", version: "0.5.6", at: now }),
      JSON.stringify({
        type: "benchmarked",
        current: { single, loaded: single },
        previous: { model: "Qwen/Qwen3-8B", single },
        at: now,
      }),
    )
    // a newer swap names its engines: left as it is
    .set(
      keys.swap(NAMED),
      JSON.stringify(
        record(NAMED, "gpu-1", {
          plan: { ...plan, engineKind: "vllm" },
          previous: { unit: "vllm-x.service", engine: "vllm" },
        }),
      ),
    )
    .set(
      keys.serving("gpu-v"),
      JSON.stringify({ unit: "vllm-new.service", since: now, previous: { unit: "vllm-old.service" } }),
    )
    .set(keys.serving("gpu-1"), JSON.stringify({ unit: "sglang-a.service", since: now }))
    .set(keys.serving("gpu-gone"), JSON.stringify({ unit: "sglang-b.service", since: now }))
    .set(
      keys.benchmark("gpu-v"),
      JSON.stringify({ repo: "Qwen/Qwen3-8B", result: { single, loaded: single } }),
    )
    .exec();
});

describe("store migration v3: every record names its engine", () => {
  it("gives each record the engine its absence meant, and the readers parse them", async () => {
    const store = new Store(redis);
    const result = await migrateStore(store, log, hostEngine);
    expect(result).toMatchObject({ from: 2, to: STORE_VERSION, invalid: [] });
    expect(STORE_VERSION).toBe(3);

    const old = await store.swaps.get(OLD);
    expect(old?.plan?.engineKind).toBe("sglang");
    expect(old?.previous).toEqual({ unit: "vllm-old.service", engine: "vllm" });
    const events = await store.swaps.events(OLD, 0);
    expect(events.map((e) => ("engine" in e ? e.engine : "-"))).toEqual(["-", "sglang", "sglang"]);
    expect(events[2]).toMatchObject({ previous: { engine: "sglang" } });
    // a finished swap's record keeps its retention
    expect(await redis.pttl(keys.swap(OLD))).toBeGreaterThan(0);

    const named = await store.swaps.get(NAMED);
    expect(named?.plan?.engineKind).toBe("vllm");
    expect(named?.previous?.engine).toBe("vllm");

    expect(await store.hosts.serving("gpu-v")).toMatchObject({
      engine: "vllm",
      previous: { unit: "vllm-old.service", engine: "vllm" },
    });
    expect((await store.hosts.serving("gpu-1"))?.engine).toBe("sglang");
    expect((await store.hosts.serving("gpu-gone"))?.engine).toBe("sglang");
    expect((await store.hosts.lastBenchmark("gpu-v"))?.engine).toBe("sglang");
  });

  it("changes nothing the second time", async () => {
    const dump = async () =>
      Promise.all(
        (await redis.keys("*"))
          .sort()
          .map(async (k) => [
            k,
            (await redis.type(k)) === "list" ? await redis.lrange(k, 0, -1) : await redis.get(k),
          ]),
      );
    const before = await dump();
    await redis.set(keys.version, "2");
    expect(await migrateStore(new Store(redis), log, hostEngine)).toMatchObject({ migrated: 0 });
    expect(await dump()).toEqual(before);
  });
});
