import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keys, swapKeys } from "../../src/store/keys.ts";
import type { Bench } from "../../testbench/bench.ts";
import { makeModel } from "../../testbench/hub/index.ts";
import type { SwapDriver } from "../../testbench/swap-driver.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * What a swap costs Redis. The seeds' model (an 8 MB config.json: NVFP4 checkpoints list every module
 * the quantization ignores; 19 safetensors shards) makes a record of a few tens of KB, not the 16 MB of
 * two whole copies of the Hub's config (one in the model, one in the plan). A dry run's keys expire after
 * records.dryRunHours, a finished swap's after records.finishedDays.
 */
const MODEL = "nvidia/Seeds-Qwen3.5-397B-A17B-NVFP4";
const CONFIG_BYTES = 8_000_000;
const RECORD_MAX = 64 * 1024;

let bench: Bench;
let swaps: SwapDriver;
let redis: Redis;
useSwapBench(
  {
    hosts: [{ name: "gpu-1", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } }],
    startBot: true,
  },
  (b, s) => {
    bench = b;
    swaps = s;
  },
);

beforeAll(() => {
  const model = makeModel("qwen3.5-moe-nvfp4", { id: MODEL, shards: 19 });
  const config = model.files.find((f) => f.path === "config.json")!;
  const parsed = JSON.parse(String(config.content)) as Record<string, unknown>;
  const quant = (parsed.quantization_config ?? {}) as Record<string, unknown>;
  // as a real NVFP4 export does: every module left in BF16, by name (here enough of them for 8 MB)
  const ignore: string[] = [];
  let size = JSON.stringify(parsed).length;
  for (let i = 0; size < CONFIG_BYTES; i++) {
    const name = `model.language_model.layers.${i % 60}.mlp.experts.${i}.gate_up_proj`;
    ignore.push(name);
    size += name.length + 3;
  }
  parsed.quantization_config = { ...quant, ignore };
  const text = JSON.stringify(parsed, null, 0);
  config.content = text;
  config.size = Buffer.byteLength(text);
  bench.hub.addModel(model);
  redis = new Redis(bench.redis.url);
});

afterAll(() => {
  redis?.disconnect();
});

describe("a swap record in Redis", () => {
  it("of the seeds' model (8 MB config.json, 19 shards) stays under 64 KB; a dry run's keys expire", async () => {
    const card = await swaps.request(`${MODEL} --dry-run`, "gpu-1");
    const id = swaps.swapId(card.ts);
    await swaps.outcome(card.ts, /Dry run/);
    const record = await swaps.record(id);
    expect(record?.model?.files.filter((f) => f.path.endsWith(".safetensors"))).toHaveLength(19);
    expect(record?.facts?.quantization).toBe("nvfp4");
    expect(await redis.strlen(keys.swap(id))).toBeLessThan(RECORD_MAX);
    const hour = 3_600_000;
    for (const key of swapKeys(id)) {
      if ((await redis.exists(key)) === 0) continue;
      const ttl = await redis.pttl(key);
      expect(ttl, key).toBeGreaterThan(0);
      expect(ttl, key).toBeLessThanOrEqual(24 * hour);
    }
  }, 90_000);

  it("of a whole swap of it, with its events, stays under 64 KB and is kept for records.finishedDays", async () => {
    const card = await swaps.request(MODEL, "gpu-1");
    const id = swaps.swapId(card.ts);
    await swaps.approve(card.ts);
    await swaps.outcome(card.ts, /Swapped/, 120_000);
    expect(await redis.strlen(keys.swap(id))).toBeLessThan(RECORD_MAX);
    const events = await redis.lrange(keys.swapEvents(id), 0, -1);
    expect(events.length).toBeGreaterThan(5);
    expect(events.reduce((n, e) => n + e.length, 0)).toBeLessThan(RECORD_MAX);
    const ttlDays = (await redis.pttl(keys.swap(id))) / 86_400_000;
    expect(ttlDays).toBeGreaterThan(364);
    expect(ttlDays).toBeLessThanOrEqual(365);
  }, 150_000);
});
