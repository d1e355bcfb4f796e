import { describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import { startClientStream } from "../../testbench/client-stream.ts";
import type { SwapDriver } from "../../testbench/swap-driver.ts";
import { addParkModels, PARK_HOST, PARK_MODELS, parkBenchOptions } from "../support/park-bench.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * vLLM's sleep mode as a fast rollback (swaps.sleepMode, issue #15; SGLang's memory saver: sglang-park.test.ts), on the bench behind a real HAProxy
 * with a standby slot: a vLLM unit started for it is parked (POST /sleep: weights to host RAM) when the
 * next swap starts, instead of stopped; a new model that fails its checks is stopped and the parked one
 * woken (seconds, not a reload), the front door sends the held requests back to it, and no client
 * request fails; a new model that passes gets the requests, and the parked unit stops.
 */
const { A, B, C } = PARK_MODELS;
const HOST = PARK_HOST;
let bench: Bench;
let swaps: SwapDriver;

useSwapBench(parkBenchOptions("vllm"), (b, s) => {
  bench = b;
  swaps = s;
  addParkModels(b);
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
