import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BENCH_WEIGHT_SCALE,
  type Bench,
  SEED_BOX_FREE_DISK_BYTES,
  startBench,
} from "../../testbench/bench.ts";
import { startClientStream } from "../../testbench/client-stream.ts";
import { makeModel } from "../../testbench/hub/index.ts";
import { SwapDriver } from "../../testbench/swap-driver.ts";

/**
 * vLLM's sleep mode as a fast rollback (swaps.sleepMode, issue #15; SGLang's memory saver: sglang-park.test.ts), on the bench behind a real HAProxy
 * with a standby slot: a vLLM unit started for it is parked (POST /sleep: weights to host RAM) when the
 * next swap starts, instead of stopped; a new model that fails its checks is stopped and the parked one
 * woken (seconds, not a reload), the front door sends the held requests back to it, and no client
 * request fails; a new model that passes gets the requests, and the parked unit stops.
 */
/** Three checkpoints of the real 223 GB model (bench.weightScale): none fits beside another on the GPUs. */
const A = "nvidia/Qwen3.5-397B-A17B-NVFP4";
const B = "nvidia/Qwen3.5-397B-A17B-NVFP4-nan";
const C = "nvidia/Qwen3.5-397B-A17B-NVFP4-next";
const HOST = "gpu-1";
let bench: Bench;
let swaps: SwapDriver;

beforeAll(async () => {
  bench = await startBench({
    swaps: { pollSeconds: 0.2, cardUpdateSeconds: 1, healthTimeoutSeconds: 20, sleepMode: true },
    weightScale: BENCH_WEIGHT_SCALE,
    hosts: [
      {
        name: HOST,
        gpus: "8x-rtx-pro-6000-blackwell",
        serving: { preset: "qwen3-fp8-dense" },
        vllm: "only",
        diskFreeBytes: SEED_BOX_FREE_DISK_BYTES,
        frontDoor: { holdSeconds: 60, standby: true },
        waitHealthy: true,
      },
    ],
  });
  bench.slack.setRateLimits({ scale: 100 });
  for (const id of [A, B, C])
    bench.hub.addModel(makeModel("qwen3.5-moe-nvfp4", { id, gated: false, scale: BENCH_WEIGHT_SCALE }));
  await bench.startBot();
  swaps = new SwapDriver(bench);
}, 180_000);

afterAll(async () => {
  await swaps?.close();
  await bench?.stop();
});

describe("swaps.sleepMode", () => {
  let parkedUnit = "";

  it("starts vLLM units parkable; the old SGLang unit, not started for its memory saver, is stopped", async () => {
    const swap = await swaps.request(`${A} --engine-ref v0.18.0`, HOST);
    const plan = await swaps.plan(swap.ts);
    expect(JSON.stringify(plan.blocks)).toContain(
      "*Old model* stopped: sglang-gpu-1.service is stopped, not parked: it was not started for SGLang's memory saver",
    );
    await swaps.approve(swap.ts);
    await swaps.outcome(swap.ts, /Swapped/);
    const record = await swaps.record(swaps.swapId(swap.ts));
    expect(record?.plan?.unitText).toContain("--enable-sleep-mode");
    expect(record?.plan?.unitText).toContain("Environment=VLLM_SERVER_DEV_MODE=1");
    parkedUnit = record!.plan!.unitName;
  }, 180_000);

  it("parks the old vLLM unit, wakes it in seconds when the new model answers NaN, and no client fails", async () => {
    const host = bench.host(HOST);
    await host.sim.setFault("vllm", { models: { "NVFP4-nan": { mode: "nan" } } });
    const clients = startClientStream(host.frontDoor!.url, { everyMs: 100 });
    const swap = await swaps.request(`${B} --engine-ref v0.18.0`, HOST);
    const plan = await swaps.plan(swap.ts);
    expect(JSON.stringify(plan.blocks)).toContain("*Old model* parked, not stopped");
    await swaps.approve(swap.ts);
    await swaps.outcome(swap.ts, /Rolled back/);
    const seen = await clients.stop();
    const thread = swaps.threadText(swap.ts);
    expect(thread).toMatch(/💤 `vllm-nvidia-qwen3-5-397b-a17b-nvfp4-[0-9a-f]{7}\.service` parked/);
    expect(thread).toMatch(/⏰ `vllm-nvidia-qwen3-5-397b-a17b-nvfp4-[0-9a-f]{7}\.service` woken in \d/);
    expect(seen.failed).toBe(0);
    expect(seen.answered).toBeGreaterThan(10);
    // woken, never restarted: one start of the parked unit in its life
    expect(await swaps.startsOf(HOST, parkedUnit)).toBe(1);
    expect(await host.sim.unitState(parkedUnit)).toMatchObject({ activeState: "active" });
    const sleeping = await fetch(`http://127.0.0.1:${host.servingPort}/is_sleeping`);
    expect(await sleeping.json()).toEqual({ is_sleeping: false });
    // the front door keeps vLLM's development endpoints from clients
    expect((await fetch(`${host.frontDoor!.url}/sleep?level=1`, { method: "POST" })).status).toBe(403);
    await host.sim.setFault("vllm", {});
  }, 180_000);

  it("a new model that passes takes the requests, and the parked unit stops", async () => {
    const host = bench.host(HOST);
    const swap = await swaps.request(`${C} --engine-ref v0.18.0`, HOST);
    await swaps.approve(swap.ts);
    await swaps.outcome(swap.ts, /Swapped/);
    const thread = swaps.threadText(swap.ts);
    expect(thread).toMatch(/💤 .* parked/);
    expect(thread).toMatch(/🛑 `vllm-nvidia-qwen3-5-397b-a17b-nvfp4-[0-9a-f]{7}\.service`, parked, stopped/);
    expect(await host.sim.unitState(parkedUnit)).toMatchObject({
      activeState: "inactive",
      unitFileState: "disabled",
    });
    const serving = await (await swaps.store()).hosts.serving(HOST);
    expect(serving?.engine).toBe("vllm");
    expect(serving?.port).not.toBe(host.servingPort);
  }, 180_000);
});
