import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
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
/** A repository of 20,000 files: 19 shards, its configs and tokenizer, and images and docs nobody serves. */
const CROWDED = "sim-org/Crowded-Qwen3.5-NVFP4";
const CROWDED_FILES = 20_000;

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
  const crowded = makeModel("qwen3.5-moe-nvfp4", { id: CROWDED, shards: 19 });
  for (let i = 0; crowded.files.length < CROWDED_FILES; i++) {
    const n = String(i).padStart(5, "0");
    crowded.files.push(
      i % 2 === 0
        ? { path: `assets/images/figure-${n}.png`, size: 2048 }
        : { path: `docs/page-${n}.md`, size: 600 },
    );
  }
  // and some beside the weights, as model cards' figures often are
  for (let i = 0; i < 50; i++) crowded.files[CROWDED_FILES - 1 - i] = { path: `figure-${i}.png`, size: 4096 };
  bench.hub.addModel(crowded);
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

  it("of a repository with 20,000 files (19 shards, the rest images and docs) keeps what the download fetches: a plan, not STORE_RECORD_TOO_LARGE", async () => {
    const card = await swaps.request(`${CROWDED} --dry-run`, "gpu-1");
    const id = swaps.swapId(card.ts);
    const end = await swaps.outcome(card.ts, /Dry run: plan only|Failed/, 90_000);
    expect(end.text, swaps.threadText(card.ts).slice(-3000)).toMatch(/Dry run: plan only/);
    const record = await swaps.record(id);
    expect(record?.outcome).toBe("planned");
    const model = record!.model!;
    const weights = model.files.filter((f) => f.path.endsWith(".safetensors"));
    expect(weights).toHaveLength(19);
    for (const f of weights) expect(f.sha256).toMatch(/^[0-9a-f]{64}$/);
    const paths = model.files.map((f) => f.path);
    expect(paths).toEqual(
      expect.arrayContaining(["config.json", "hf_quant_config.json", "tokenizer_config.json"]),
    );
    expect(paths.filter((p) => p.includes("/") || p.endsWith(".png"))).toEqual([]);
    expect(model.totalBytes).toBe(model.files.reduce((n, f) => n + f.size, 0));
    // the rest, counted
    expect(model.notFetched?.files).toBe(CROWDED_FILES - model.files.length);
    expect(await redis.strlen(keys.swap(id))).toBeLessThan(RECORD_MAX);
    const plan = await swaps.dryRunPlan(card.ts);
    expect(JSON.stringify(plan.blocks)).toContain(
      `${model.notFetched?.files.toLocaleString("en-US")} other files`,
    );
  }, 120_000);

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

  it("of a whole swap of the repository with 20,000 files downloads what its record lists, verified, and serves it", async () => {
    bench.hub.clearRequests();
    const card = await swaps.request(CROWDED, "gpu-1");
    const id = swaps.swapId(card.ts);
    await swaps.approve(card.ts);
    const end = await swaps.outcome(card.ts, /Swapped|Failed|Rolled back/, 120_000);
    expect(end.text, swaps.threadText(card.ts).slice(-3000)).toMatch(/Swapped/);
    const record = (await swaps.record(id))!;
    const listed = new Set(record.model!.files.map((f) => f.path));
    const fetched = new Set(
      bench.hub
        .requests()
        .filter((r) => r.kind === "resolve" && r.repo === CROWDED && r.method === "GET")
        .map((r) => r.file),
    );
    // the download fetched the weights and the files beside them, and nothing of the 19,9xx others
    expect([...fetched].sort()).toEqual([...listed].sort());
    expect(swaps.threadText(card.ts)).toMatch(
      new RegExp(`Download complete: ${listed.size} files, .*sizes and sha256 verified`),
    );
    expect(await redis.strlen(keys.swap(id))).toBeLessThan(RECORD_MAX);
  }, 150_000);

  it("of a host whose serving unit file is 300 KB: the plan is refused with what to look at, not STORE_RECORD_TOO_LARGE", async () => {
    const sim = bench.host("gpu-1").sim;
    // the unit that serves now: an earlier test's swap may have replaced the config's
    const unit = (await (await swaps.store()).hosts.serving("gpu-1"))?.unit ?? bench.host("gpu-1").unit;
    const file = join(sim.unitDir, unit);
    const text = await readFile(file, "utf8");
    // comments systemd ignores, as a generated file can carry
    await writeFile(file, `${text}\n${"# generated by an inventory tool, line of padding\n".repeat(6000)}`);
    try {
      const card = await swaps.request(`${MODEL} --dry-run`, "gpu-1");
      const id = swaps.swapId(card.ts);
      await swaps.outcome(card.ts, /Dry run|Failed|Refused/, 90_000);
      const record = await swaps.record(id);
      const check = record?.plan?.checks.find((c) => c.id === "unit-file");
      expect(check).toMatchObject({ ok: false });
      expect(check?.detail).toMatch(
        new RegExp(
          `the serving unit's file \\(${unit}\\) is 29\\d KB: modelswap reads unit files of up to 64 KB`,
        ),
      );
      expect(check?.fix).toMatch(new RegExp(`systemctl cat ${unit}`));
      expect(record?.plan?.host.currentUnit.text).toBe("");
      expect(await redis.strlen(keys.swap(id))).toBeLessThan(RECORD_MAX);
    } finally {
      await writeFile(file, text);
    }
  }, 120_000);
});
