import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import {
  BENCH_WEIGHT_SCALE,
  type Bench,
  CHANNEL,
  SEED_BOX_FREE_DISK_BYTES,
  USERS,
} from "../../testbench/bench.ts";
import { checkpointModel, makeModel } from "../../testbench/hub/index.ts";
import type { SwapDriver } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";
import { shown } from "../support/shown.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * Any model the engines serve (issue 28, "Done when"): real configurations of gpt-oss-120b (MXFP4), an
 * NVFP4 Llama 3.3 70B, an AWQ Qwen and a compressed-tensors W4A16 Llama, served by the simulated Hub at
 * bench scale, each planned on the seeds' 8× RTX PRO 6000 host with a tp that fits; a per-swap --set
 * within swaps.settable, a house flag and a model profile, each shown with where it came from; and the
 * flags of a real (not dry) swap checked against the engine build's own --help.
 */
let bench: Bench;
let swaps: SwapDriver;

const FIXTURES = new URL("../fixtures/model-configs/", import.meta.url).pathname;
const GPT_OSS = "openai/gpt-oss-120b";
const LLAMA_FP4 = "nvidia/Llama-3.3-70B-Instruct-FP4";
const QWEN_AWQ = "Qwen/Qwen2.5-72B-Instruct-AWQ";
const W4A16 = "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16";

useSwapBench(
  {
    weightScale: BENCH_WEIGHT_SCALE,
    swaps: { settable: ["context-length", "reasoning-parser"] },
    models: [
      {
        model: "openai/gpt-oss-*",
        flags: [{ setting: "context-length", value: "65536" }],
        reason: "our agents keep to 64k tokens",
      },
    ],
    hosts: [
      {
        name: "gpu-1",
        gpus: "8x-rtx-pro-6000-blackwell",
        serving: { preset: "qwen3-fp8-dense" },
        diskFreeBytes: SEED_BOX_FREE_DISK_BYTES,
        config: { flags: [{ setting: "enable-metrics", reason: "our Prometheus scrapes every unit" }] },
      },
    ],
    startBot: true,
  },
  (b, s) => {
    bench = b;
    swaps = s;
    for (const repo of [GPT_OSS, LLAMA_FP4, QWEN_AWQ, W4A16])
      bench.hub.addModel(
        checkpointModel(`${FIXTURES}${repo.replace("/", "--")}`, { scale: BENCH_WEIGHT_SCALE }),
      );
  },
);

/** A dry run's plan and the details posted under it, as the channel shows them. */
async function planShown(cardTs: string): Promise<string> {
  const plan = await swaps.dryRunPlan(cardTs);
  const details = await until(() => swaps.planDetailsOf(cardTs).at(-1), { what: "the plan's details" });
  return `${shown(plan)}\n${shown(details)}`;
}

async function dryRun(model: string): Promise<{ text: string; id: string }> {
  const card = await swaps.request(`${model} --dry-run`, "gpu-1");
  return { text: await planShown(card.ts), id: swaps.swapId(card.ts) };
}

describe("dry runs of real configurations on the 8× RTX PRO 6000 host", () => {
  it.each([
    [GPT_OSS, /--tool-call-parser gpt-oss/],
    [LLAMA_FP4, /--quantization modelopt_fp4/],
    [
      QWEN_AWQ,
      /_No known-good recipe for Qwen2ForCausalLM, model_type qwen2: engine defaults; the sanity gate decides_/,
    ],
    [W4A16, /--tool-call-parser llama3/],
  ])(
    "%s plans with a tp that fits",
    async (model, says) => {
      const { text, id } = await dryRun(model);
      expect(text).toContain("*Dry run*");
      expect(text).toMatch(says);
      const plan = (await swaps.record(id))?.plan;
      expect(plan?.checks.filter((c) => !c.ok)).toEqual([]);
      expect(plan?.tp).toBe(8);
      // the house flag of gpu-1, shown with where it came from
      expect(text).toMatch(
        /• `--enable-metrics`: our Prometheus scrapes every unit _\(host gpu-1 \(hosts\[\]\.flags\)\)_/,
      );
      expect(text).toMatch(
        /_Engine: main at [0-9a-f]{7}, upstream main, as no request, profile or host names another: a new build for this swap_/,
      );
    },
    90_000,
  );

  it("a per-swap --set replaces the profile's value, the plan says whose each was, and the fit holds that context", async () => {
    const card = await swaps.request(`${GPT_OSS} --dry-run --set context-length=32768`, "gpu-1");
    const text = await planShown(card.ts);
    expect(text).toMatch(
      /• `--context-length 32768`: asked for with --set on \/llm swap; replaces profile openai\/gpt-oss-\* \(models\[\]\)'s 65536 _\(swap \(--set\)\)_/,
    );
    expect(text).toMatch(
      /✓ \*vram\*: .*one 32768-token sequence \(context-length 32768 from swap \(--set\)\) needs [0-9.]+ GiB\/GPU of KV cache/,
    );
  }, 90_000);

  it("the test driver's /llm swap when Slack stops waiting for the ack: the bot queues it anyway, and the card it posts is found", async () => {
    // what a loaded 2-core machine can do to any test's command (Slack waits 3 s), made sure of: Redis
    // holds the bot's writes (CLIENT PAUSE … WRITE), so it queues the swap only after Slack gave up
    const redis = new Redis(bench.redis.url);
    bench.slack.setAckDeadline(200);
    try {
      await redis.call("CLIENT", "PAUSE", "1500", "WRITE");
      const card = await swaps.request(`${GPT_OSS} --dry-run --set context-length=32768`, "gpu-1");
      expect(swaps.lastAck?.timedOut).toBe(true);
      expect(await planShown(card.ts)).toContain("--context-length 32768");
    } finally {
      bench.slack.setAckDeadline(3000);
      redis.disconnect();
    }
  }, 90_000);

  it("a --set the config does not allow is refused with what is, and nothing is queued", async () => {
    const before = await bench.queuedJobCount();
    const ack = await bench.slack.command(
      USERS.alice,
      `swap ${GPT_OSS} --host gpu-1 --set kv-cache-dtype=fp8_e5m2`,
      {
        channel: CHANNEL,
      },
    );
    expect(ack.ackResponse?.text).toBe(
      "✋ Cannot swap: `--set kv-cache-dtype` is not a setting a swap may set: a swap may set `context-length`, `reasoning-parser` (swaps.settable); an admin adds names to swaps.settable, or sets it for every swap of the model in its profile (models[].flags). Nothing was queued.",
    );
    const trust = await bench.slack.command(
      USERS.alice,
      `swap ${GPT_OSS} --host gpu-1 --set trust-remote-code`,
      {
        channel: CHANNEL,
      },
    );
    expect(trust.ackResponse?.text).toMatch(
      /^✋ Cannot swap: `--set trust-remote-code`: trust-remote-code is decided from the model repo's files/,
    );
    const bad = await bench.slack.command(
      USERS.alice,
      `swap ${GPT_OSS} --host gpu-1 --set context-length=$(reboot)`,
      {
        channel: CHANNEL,
      },
    );
    expect(bad.ackResponse?.text).toMatch(
      /^Cannot swap: --set needs name=value, the flag's name without its dashes/,
    );
    const words = await bench.slack.command(
      USERS.alice,
      `swap ${GPT_OSS} --host gpu-1 --set context-length=32k`,
      {
        channel: CHANNEL,
      },
    );
    expect(words.ackResponse?.text).toBe(
      "✋ Cannot swap: `--set context-length`: context-length takes a whole number of tokens, e.g. context-length=32768. Nothing was queued.",
    );
    expect(await bench.queuedJobCount()).toBe(before);
  }, 60_000);
});

describe("a swap's flags against the engine build's own --help", () => {
  it("gpt-oss-120b with --set: the build's --help has every flag of the plan, before anything serving is touched", async () => {
    const card = await swaps.request(`${GPT_OSS} --set reasoning-parser=gpt-oss`, "gpu-1");
    const id = swaps.swapId(card.ts);
    const record = await swaps.untilRecord(id, (r) => r.stages.build.state === "done", {
      what: "the engine build",
      timeoutMs: 90_000,
    });
    const flags = record.plan?.checks.find((c) => c.id === "flags");
    expect(flags).toMatchObject({
      ok: true,
      detail: expect.stringMatching(/^this engine build has all \d+ flags of the plan$/),
    });
    expect(record.plan?.flags.find((f) => f.setting === "reasoning-parser")).toMatchObject({
      flag: "--reasoning-parser",
      value: "gpt-oss",
      from: "swap (--set)",
    });
    await swaps.reject(card.ts);
    await swaps.outcome(card.ts, /[Rr]ejected/);
  }, 120_000);
});

describe("the engine build the host trusts (issue 28 §5)", () => {
  it("a swap after one built from main reuses the serving unit's build of that commit: no rebuild, and the plan says so", async () => {
    const first = "sim-org/llama-first";
    const second = "sim-org/llama-second";
    bench.hub.addModel(makeModel("llama-bf16-small", { id: first, gated: false, scale: BENCH_WEIGHT_SCALE }));
    bench.hub.addModel(
      makeModel("llama-bf16-small", { id: second, gated: false, scale: BENCH_WEIGHT_SCALE }),
    );
    const card = await swaps.request(first, "gpu-1");
    await swaps.approve(card.ts);
    await swaps.outcome(card.ts, /Swapped/, 180_000);
    const built = (await swaps.record(swaps.swapId(card.ts)))?.plan?.engine;
    expect(built?.reused).toBeUndefined();

    const next = await swaps.request(`${second} --dry-run`, "gpu-1");
    const text = await planShown(next.ts);
    const plan = (await swaps.record(swaps.swapId(next.ts)))?.plan;
    expect(plan?.engine).toMatchObject({
      ref: "main",
      commit: built?.commit,
      buildDir: built?.buildDir,
      reused: true,
    });
    expect(text).toMatch(
      /_Engine: main at [0-9a-f]{7}, upstream main, as no request, profile or host names another: the serving unit's build of that commit is reused, no rebuild_/,
    );
    expect(text).toMatch(
      /\*Engine\* sglang branch `main` at `[0-9a-f]{7}` of .*: the build the serving unit runs, of this commit, reused/,
    );
  }, 240_000);
});
