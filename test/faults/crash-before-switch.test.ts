import { describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import { addSimModel, type SwapDriver, unitOf } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * The bot is a real `modelswap start` process, SIGKILLed while a swap is in each stage before the switch
 * (the host's commands and the Hub hold the moment still, so the kill lands inside the stage), then a new
 * process is started: the swap finishes from where it was, with one card, one download, one build.
 */
const HOST = "gpu-1";
let bench: Bench;
let swaps: SwapDriver;

useSwapBench(
  {
    swaps: { lockSeconds: 5, stalledCheckSeconds: 1 },
    hosts: [{ name: HOST, gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } }],
  },
  (b, s) => {
    bench = b;
    swaps = s;
  },
);

const addModel = (name: string) => addSimModel(bench, name);

/** What must hold after any crash: one card, the swap done, its new unit started exactly once. */
async function expectFinishedOnce(cardTs: string, swapId: string): Promise<void> {
  await swaps.outcome(cardTs, /Swapped/);
  const record = await swaps.record(swapId);
  expect(record?.outcome).toBe("succeeded");
  expect(await swaps.startsOf(HOST, unitOf(record))).toBe(1);
  expect(swaps.cardsOf(swapId)).toHaveLength(1);
  expect(swaps.plansOf(cardTs)).toHaveLength(1);
  await bench.killChildren();
}

describe("a worker killed before the switch, then restarted", () => {
  it("while the Hub is answering (resolve): the new process resolves again and finishes", async () => {
    const model = addModel("crash-at-resolve");
    await bench.spawnBot();
    bench.hub.holdApi();
    const card = await swaps.request(model, HOST);
    const swapId = swaps.swapId(card.ts);
    await bench.hub.apiHeld();
    await bench.killChildren();
    bench.hub.releaseApi();
    await bench.spawnBot();
    await swaps.approve(card.ts);
    await expectFinishedOnce(card.ts, swapId);
  }, 120_000);

  it("while reading the GPUs (preflight): the new process plans again and finishes", async () => {
    const model = addModel("crash-at-preflight");
    const host = bench.host(HOST).sim;
    await bench.spawnBot();
    await host.hold("nvidia-smi");
    const card = await swaps.request(model, HOST);
    const swapId = swaps.swapId(card.ts);
    await host.waitHeld("nvidia-smi");
    await bench.killChildren();
    await host.release("nvidia-smi");
    await bench.spawnBot();
    await swaps.approve(card.ts);
    await expectFinishedOnce(card.ts, swapId);
  }, 120_000);

  it("mid-download: the detached hf keeps going, the new process re-attaches, no byte is fetched twice", async () => {
    const model = addModel("crash-at-download");
    const sim = bench.host(HOST).sim;
    const weights = bench.hub.getModel(model)!.files.filter((f) => f.path.endsWith(".safetensors"));
    const weightBytes = weights.reduce((n, f) => n + f.size, 0);
    const downloadsBefore = (await sim.calls()).filter(
      (c) => c.cmd === "hf" && c.argv[0] === "download",
    ).length;
    bench.hub.setThrottle(1_000_000); // ≈ 6 s for the weights
    await bench.spawnBot();
    const seen = bench.hub.requests().length;
    const card = await swaps.request(model, HOST);
    const swapId = swaps.swapId(card.ts);
    await swaps.untilRecord(swapId, (r) => (r.download?.bytes ?? 0) > 0, { what: "bytes on the host" });
    await bench.killChildren();

    // the download is detached: it keeps running on the host with nobody watching
    expect(await swaps.liveDownloads(HOST)).toBeGreaterThan(0);

    await bench.spawnBot();
    await swaps.approve(card.ts);
    await expectFinishedOnce(card.ts, swapId);
    bench.hub.setThrottle(null);
    const downloads = (await sim.calls()).filter((c) => c.cmd === "hf" && c.argv[0] === "download");
    expect(downloads.length - downloadsBefore).toBe(1);
    const served = bench.hub
      .requests()
      .slice(seen)
      .filter((r) => r.method === "GET" && r.kind === "resolve" && r.path.endsWith(".safetensors"))
      .reduce((n, r) => n + r.bytesSent, 0);
    expect(served).toBe(weightBytes);
  }, 150_000);

  it("mid-build: the detached build keeps going, the new process re-attaches, the engine is built once", async () => {
    const model = addModel("crash-at-build");
    const sim = bench.host(HOST).sim;
    // the build's import check (`python -c 'import sglang; …'`), slowed with the host's import fault
    const importChecks = async () =>
      (await sim.calls()).filter(
        (c) => c.cmd === "python" && c.argv.some((a) => a.startsWith("import sglang")),
      ).length;
    const before = await importChecks();
    await sim.setFault("import", { seconds: 6 });
    await bench.spawnBot();
    const card = await swaps.request(model, HOST);
    const swapId = swaps.swapId(card.ts);
    await until(async () => (await importChecks()) > before, {
      what: "the build's import check",
      timeoutMs: 60_000,
    });
    await bench.killChildren();
    await bench.spawnBot();
    await swaps.approve(card.ts);
    await expectFinishedOnce(card.ts, swapId);
    await sim.setFault("import", null);
    expect((await importChecks()) - before).toBe(1);
  }, 150_000);

  it("while waiting for approval: the new process takes the ✅ given after the restart", async () => {
    const model = addModel("crash-at-approval");
    await bench.spawnBot();
    const card = await swaps.request(model, HOST);
    const swapId = swaps.swapId(card.ts);
    const plan = await swaps.plan(card.ts);
    // the plan is posted a moment before the reporter notes it: a kill in between is not "while waiting"
    await until(
      async () => Object.values((await (await swaps.store()).reports.get(swapId)).plans).includes(plan.ts),
      { what: "the plan in the reporter's state" },
    );
    await bench.killChildren();
    await bench.spawnBot();
    await swaps.approve(card.ts);
    await expectFinishedOnce(card.ts, swapId);
  }, 120_000);
});
