import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import { startClientStream } from "../../testbench/client-stream.ts";
import type { SwapDriver } from "../../testbench/swap-driver.ts";
import { addParkModels, PARK_HOST, PARK_MODELS, parkBenchOptions } from "../support/park-bench.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * SGLang's memory saver as a fast rollback (swaps.sleepMode, issue #31), on the bench behind a real HAProxy
 * with a standby slot: an SGLang unit started with `--enable-memory-saver --enable-weights-cpu-backup` is
 * parked when the next swap starts (POST /release_memory_occupation once it has no request: its weights to
 * pinned host RAM, its GPUs freed, which nvidia-smi shows), instead of stopped. A new model that fails is
 * stopped and the parked one resumed in seconds, and it answers its sanity prompts before the front door
 * gives it requests again: a resumed model whose CPU backup came back corrupted (torch_memory_saver#71) is
 * reloaded from disk. No client request fails in either. A new model that passes gets the requests, and
 * the parked unit stops.
 */
const { A, B, C } = PARK_MODELS;
const HOST = PARK_HOST;
/** The unit serving A: `sglang-nvidia-qwen3-5-397b-a17b-nvfp4-<sha7>.service`. */
const A_UNIT = /`sglang-nvidia-qwen3-5-397b-a17b-nvfp4-[0-9a-f]{7}\.service`/;
let bench: Bench;
let swaps: SwapDriver;

useSwapBench(parkBenchOptions("sglang"), (b, s) => {
  bench = b;
  swaps = s;
  addParkModels(b);
});

/** The processes that hold pinned host RAM on the simulated host (what `free` counts as used). */
async function pinned(): Promise<string[]> {
  return readdir(join(bench.host(HOST).sim.root, "state", "pinned")).catch(() => []);
}

describe("swaps.sleepMode with SGLang", () => {
  let parkedUnit = "";

  it("starts SGLang units parkable: the memory saver and its CPU backup", async () => {
    const swap = await swaps.request(A, HOST);
    const plan = await swaps.plan(swap.ts);
    // the seed's unit predates sleepMode: stopped, not parked
    expect(JSON.stringify(plan.blocks)).not.toContain("*Old model* parked");
    await swaps.approve(swap.ts);
    await swaps.outcome(swap.ts, /Swapped/);
    const record = await swaps.record(swaps.swapId(swap.ts));
    expect(record?.plan?.unitText).toMatch(/--enable-memory-saver/);
    expect(record?.plan?.unitText).toMatch(/--enable-weights-cpu-backup/);
    parkedUnit = record!.plan!.unitName;
  }, 180_000);

  it("parks the old unit, resumes it in seconds when the new model answers NaN, checks it, and no client fails", async () => {
    const host = bench.host(HOST);
    await host.sim.setFault("sglang", { models: { "NVFP4-nan": { mode: "nan" } } });
    const clients = startClientStream(host.frontDoor!.url, { everyMs: 100 });
    const swap = await swaps.request(B, HOST);
    const plan = await swaps.plan(swap.ts);
    const planText = JSON.stringify(plan.blocks);
    expect(planText).toContain("*Old model* parked, not stopped");
    expect(planText).toMatch(
      /\*Stops\* `sglang-nvidia-qwen3-5-397b-a17b-nvfp4-[0-9a-f]{7}\.service` \(running\) will be parked/,
    );
    expect(planText).toMatch(/SGLang memory saver.*comes back in at most about \d+ s/);
    await swaps.approve(swap.ts);
    await swaps.outcome(swap.ts, /Rolled back/);
    const seen = await clients.stop();
    const thread = swaps.threadText(swap.ts);
    // what nvidia-smi showed once parked: the CUDA context and NCCL buffers, not the weights
    const parked = new RegExp(
      `💤 ${A_UNIT.source} parked in [\\d.]+ m?s: its weights in host RAM, its GPUs holding up to (\\d+\\.\\d) GiB each \\(nvidia-smi\\)`,
    );
    expect(thread).toMatch(parked);
    expect(Number(parked.exec(thread)![1])).toBeLessThan(2);
    // the switch line says what happened to the old unit: parked, never "stopped and disabled"
    expect(thread).toMatch(
      new RegExp(`🔀 Switched: ${A_UNIT.source} parked \\(its park took [\\d.]+ m?s\\)`),
    );
    expect(thread).not.toMatch(new RegExp(`${A_UNIT.source} stopped and disabled`));
    expect(thread).toMatch(
      new RegExp(
        `⏰ ${A_UNIT.source} woken in [\\d.]+ m?s: its weights are back on the GPUs, and it answered its sanity prompts again`,
      ),
    );
    expect(seen.failed).toBe(0);
    expect(seen.answered).toBeGreaterThan(10);
    // resumed, never restarted; its CPU backup unpinned
    expect(await swaps.startsOf(HOST, parkedUnit)).toBe(1);
    expect(await host.sim.unitState(parkedUnit)).toMatchObject({ activeState: "active" });
    expect(await pinned()).toEqual([]);
    const record = await swaps.record(swaps.swapId(swap.ts));
    expect(record?.switch?.parked).toMatchObject({ sane: true });
    // the front door keeps SGLang's memory routes from clients
    const direct = await fetch(`${host.frontDoor!.url}/release_memory_occupation`, {
      method: "POST",
      body: "{}",
    });
    expect(direct.status).toBe(403);
  }, 180_000);

  it("a resumed model whose CPU backup came back corrupted is reloaded from disk before it takes a request", async () => {
    const host = bench.host(HOST);
    // the new model answers NaN; the parked one's backup is corrupted by its resume (torch_memory_saver#71)
    await host.sim.setFault("sglang", {
      models: { "NVFP4-nan": { mode: "nan" }, "A17B-NVFP4--": { mode: "corrupt-backup" } },
    });
    const clients = startClientStream(host.frontDoor!.url, { everyMs: 100 });
    const swap = await swaps.request(B, HOST);
    await swaps.approve(swap.ts);
    await swaps.outcome(swap.ts, /Rolled back/);
    const seen = await clients.stop();
    const thread = swaps.threadText(swap.ts);
    expect(thread).toMatch(new RegExp(`💤 ${A_UNIT.source} parked`));
    expect(thread).toMatch(
      new RegExp(
        `⚠️ ${A_UNIT.source}, parked, is reloaded from disk: it woke, but its sanity check failed: .*NaN`,
      ),
    );
    expect(thread).not.toMatch(/⏰/);
    // restarted once more: its weights from disk, and sane (the final check and the health gate passed)
    expect(await swaps.startsOf(HOST, parkedUnit)).toBe(2);
    const record = await swaps.record(swaps.swapId(swap.ts));
    expect(record?.outcome).toBe("rolled_back");
    expect(record?.switch?.parked?.reloadedAt).toBeDefined();
    const answer = await fetch(`${host.frontDoor!.url}/generate`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        text: "The capital of France is",
        sampling_params: { max_new_tokens: 4, temperature: 0 },
        return_logprob: true,
      }),
    });
    const body = (await answer.json()) as { meta_info: { output_token_logprobs: [number | null][] } };
    expect(body.meta_info.output_token_logprobs.every(([lp]) => lp !== null)).toBe(true);
    expect(seen.failed).toBe(0);
    await host.sim.setFault("sglang", {});
  }, 180_000);

  it("a new model that passes takes the requests, and the parked unit stops", async () => {
    const host = bench.host(HOST);
    const swap = await swaps.request(C, HOST);
    await swaps.approve(swap.ts);
    await swaps.outcome(swap.ts, /Swapped/);
    const thread = swaps.threadText(swap.ts);
    expect(thread).toMatch(/💤 .* parked/);
    expect(thread).toMatch(new RegExp(`🛑 ${A_UNIT.source}, parked, stopped`));
    expect(await host.sim.unitState(parkedUnit)).toMatchObject({
      activeState: "inactive",
      unitFileState: "disabled",
    });
    expect(await pinned()).toEqual([]);
  }, 180_000);
});
