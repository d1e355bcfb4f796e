import { describe, expect, it } from "vitest";
import { BENCH_WEIGHT_SCALE, type Bench, CHANNEL, SEED_BOX_FREE_DISK_BYTES } from "../../testbench/bench.ts";
import { makeModel } from "../../testbench/hub/index.ts";
import type { SwapDriver } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";
import { shown } from "../support/shown.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * The plan shows the real model's figures on the bench (issue #13). The Hub serves the seeds' 223 GB
 * Qwen3.5 NVFP4 in its 19 real shards at 1/32768 of their size (6.8 MB of weights, really downloaded and verified)
 * and the bot is told so (bench.weightScale): every check of the plan reasons with the real sizes on
 * hosts that report real resources (nvidia-smi's 96 GB RTX PRO 6000 ×8 and 141 GB H200; df's free disk:
 * the seeds' 7 TB, or too little for the real model though plenty for the scaled files). Before, the
 * same plan said "0.0 GiB/GPU", "6.3 MB" and about 2 min of downtime.
 */
let bench: Bench;
let swaps: SwapDriver;

const QWEN = "nvidia/Qwen3.5-397B-A17B-NVFP4";
const KIMI = "moonshotai/Kimi-K2-Thinking";
const BENCH_LINE = `🧪 Bench: the simulated Hub serves the weight files at 1/${BENCH_WEIGHT_SCALE} of their real size (bench.weightScale). Every figure in this plan is the real model's; times measured later (download, downtime) are the bench's.`;

useSwapBench(
  {
    weightScale: BENCH_WEIGHT_SCALE,
    hubPolicy: { remoteCodeOrgs: ["moonshotai"] },
    hosts: [
      {
        name: "gpu-1",
        gpus: "8x-rtx-pro-6000-blackwell",
        serving: { preset: "qwen3-fp8-dense" },
        diskFreeBytes: SEED_BOX_FREE_DISK_BYTES,
      },
      // 150 GB free: ample for the 6.8 MB the bench moves, not for the real 223 GB
      {
        name: "gpu-small-disk",
        gpus: "8x-rtx-pro-6000-blackwell",
        serving: { preset: "qwen3-fp8-dense" },
        diskFreeBytes: 150e9,
      },
      {
        name: "h200",
        gpus: "h200-1gpu",
        serving: { preset: "llama-bf16-small" },
        diskFreeBytes: SEED_BOX_FREE_DISK_BYTES,
      },
    ],
    startBot: true,
  },
  (b, s) => {
    bench = b;
    swaps = s;
    bench.hub.addModel(makeModel("qwen3.5-moe-nvfp4", { scale: BENCH_WEIGHT_SCALE }));
    bench.hub.addModel(makeModel("kimi-k2-int4", { scale: BENCH_WEIGHT_SCALE }));
  },
);

/** The dry run's plan as shown, and the card's text once it ended. */
/** A dry run's plan and card as the channel shows them; `plan` is the plan with its details under it. */
async function dryRun(model: string, host: string): Promise<{ plan: string; card: string }> {
  const card = await swaps.request(`${model} --dry-run`, host);
  const plan = await swaps.dryRunPlan(card.ts);
  const details = await until(() => swaps.planDetailsOf(card.ts).at(-1), { what: "the plan's details" });
  return { plan: `${shown(plan)}\n${shown(details)}`, card: shown(swaps.card(card.ts)) };
}

const lineOf = (text: string, start: string): string => {
  const line = text.split("\n").find((l) => l.startsWith(start));
  if (line === undefined) throw new Error(`no line starting ${start} in:\n${text}`);
  return line;
};

describe("the seeds' swap, planned with the real model's figures", () => {
  it("223 GB at tp 8 on 8× RTX PRO 6000: GiB/GPU, disk with hf's margin on 7 TB, minutes of downtime, and one bench line", async () => {
    const { plan, card } = await dryRun(QWEN, "gpu-1");
    expect(plan).toContain("*Dry run*");
    expect(plan.split("\n").filter((l) => l.includes("bench.weightScale"))).toEqual([BENCH_LINE]);
    // the bench line is among the first lines, right under the status
    expect(plan.split("\n").indexOf(BENCH_LINE)).toBe(2);
    expect(lineOf(plan, "*Expected downtime*")).toBe(
      "*Expected downtime* about 4 min 20 s from stop to healthy (health wait limit 20 min): 223 GB of weights read from the page cache (preloaded) at 10 GB/s (20 s) + 4 min to stop, start, JIT-compile and warm up the NVFP4 kernels on sm_120",
    );
    // the real 223 GB fit in the seeds' 1 TiB of RAM: preloaded into the page cache, hence 22 s of reading
    expect(lineOf(plan, "*Page cache*")).toMatch(
      /^\*Page cache\* yes: 207\.7 GiB of weights fit in the 10\d\d\.\d GiB of RAM available: they are read into the page cache before the old unit stops/,
    );
    expect(plan).toMatch(/^223 GB \(29 files; 6\.9 MB at bench scale\)$/m);
    expect(lineOf(plan, "✓ *vram*")).toBe(
      "✓ *vram*: 27.3 GiB/GPU of weights at tp 8 (207.7 GiB ÷ 8 + 5%) on 95.6 GiB GPUs; 54.0 GiB/GPU left for KV cache at mem-fraction-static 0.85",
    );
    expect(lineOf(plan, "✓ *tp*")).toBe(
      "✓ *tp*: tp 8: 32 attention heads → 4 per GPU; 2 KV heads, each replicated on 4 GPUs",
    );
    expect(lineOf(plan, "✓ *disk*")).toMatch(
      /^✓ \*disk\*: 223 GB to fetch \+ 96\.4 GB margin: 8 parallel downloads × 12\.1 GB largest shard, .*; 7\.0 TB free at \S+\/gpu-1\/models$/,
    );
    // host RAM (1 TiB) against the real KV cache, not the scaled one
    expect(plan).toContain("_Hierarchical KV cache off: host RAM 1.0 TiB is less than the 1.7 TiB it needs_");
    expect(plan).not.toMatch(/0\.0 GiB\/GPU|6\.\d MB to fetch/);
    // the card's resolve line: the real size, the bytes served beside it
    expect(card).toMatch(
      /✅ Resolve on the Hub — commit [0-9a-f]{7} · 223 GB \(6\.9 MB at bench scale\) · 29 files/,
    );
  }, 90_000);

  it("fits at tp 4 and not below: --tp 2 is refused with the real GiB figures and the tps that work", async () => {
    const two = await dryRun(`${QWEN} --tp 2`, "gpu-1");
    expect(two.plan).toContain("*Refused*: failing vram");
    expect(lineOf(two.plan, "✗ *vram*")).toBe(
      "✗ *vram*: 109.0 GiB/GPU of weights at tp 2 (207.7 GiB ÷ 2 + 5%) on 95.6 GiB GPUs: does not fit: weights may use at most 76.5 GiB/GPU to leave 5% for KV cache",
    );
    expect(two.plan).toContain("_Fix:_ use --tp 4 or 8 (these split the heads and fit the weights)");

    const four = await dryRun(`${QWEN} --tp 4`, "gpu-1");
    expect(four.plan).toContain("*Dry run*");
    expect(lineOf(four.plan, "✓ *vram*")).toMatch(
      /^✓ \*vram\*: 54\.5 GiB\/GPU of weights at tp 4 \(207\.7 GiB ÷ 4 \+ 5%\) on 95\.6 GiB GPUs; 26\.7 GiB\/GPU left/,
    );
  }, 90_000);

  it("refuses a disk too small for the real model although the scaled files would fit", async () => {
    const { plan } = await dryRun(QWEN, "gpu-small-disk");
    expect(plan).toContain("*Refused*: failing disk");
    expect(lineOf(plan, "✗ *disk*")).toMatch(
      /^✗ \*disk\*: 223 GB to fetch \+ 96\.4 GB margin: .*; 150 GB free at \S+\/gpu-small-disk\/models: 169 GB short$/,
    );
    expect(plan).toMatch(/_Fix:_ free at least 169 GB in \S+\/gpu-small-disk\/models/);
  }, 90_000);

  it("refuses a model too large for the host's VRAM, in real GiB: Kimi K2's 594 GB on one 141 GB H200", async () => {
    const { plan } = await dryRun(KIMI, "h200");
    expect(plan).toContain("*Refused*");
    expect(lineOf(plan, "✗ *vram*")).toBe(
      "✗ *vram*: 581.2 GiB/GPU of weights at tp 1 (553.5 GiB ÷ 1 + 5%) on 140.4 GiB GPUs: does not fit: weights may use at most 116.5 GiB/GPU to leave 5% for KV cache",
    );
    expect(plan).toContain(
      "_Fix:_ the model needs tp 8: 8 × NVIDIA H200 (this host has 1); choose a bigger host with --host, or a smaller checkpoint",
    );
    expect(lineOf(plan, "*Expected downtime*")).toMatch(
      /^\*Expected downtime\* about 2 min 30 s from stop to healthy \(health wait limit 25 min\): 594 GB of weights read from the page cache \(preloaded\) at 10 GB\/s \(1 min\) \+ 1 min 30 s to stop, start and capture CUDA graphs$/,
    );
  }, 90_000);
});

describe("the download, at bench scale", () => {
  it("shows the bytes it moves labelled as bench scale, with the real size beside them, in progress and when verified", async () => {
    // 1 MB/s: the 6.9 MB take a few seconds, so the card shows the download under way
    bench.hub.setThrottle(1_000_000);
    try {
      const card = await swaps.request(QWEN, "gpu-1");
      await swaps.approve(card.ts);
      await swaps.outcome(card.ts, /Swapped/);
      const versions = [...(swaps.card(card.ts).history ?? []), swaps.card(card.ts)].map((v) =>
        JSON.stringify(v.blocks ?? []),
      );
      expect(
        versions.some((v) =>
          /Download — \d+ % of 6\.9 MB at bench scale \(real model 223 GB\) · \d+\.\d MB\/s/.test(v),
        ),
      ).toBe(true);
      expect(shown(swaps.card(card.ts))).toMatch(
        /✅ Download — 6\.9 MB at bench scale \(real model 223 GB\) verified in [\d.]+ (?:s|min|h|d)(?: \d+ (?:s|min|h))?/,
      );
      const reply = await until(
        () => bench.slack.thread(CHANNEL, card.ts).find((m) => m.text.startsWith("📦")),
        { what: "the download's reply in the thread" },
      );
      expect(reply.text).toBe(
        "📦 Download complete: 29 files, 6.9 MB at bench scale (real model 223 GB), sizes and sha256 verified.",
      );
      // the bytes moved really are the small ones
      expect(bench.hub.bytesServed(QWEN)).toBeLessThan(7e6);
    } finally {
      bench.hub.setThrottle(null);
    }
  }, 180_000);
});
