import { readFile } from "node:fs/promises";
import { afterEach, describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import { addSimModel, type SwapDriver, unitOf } from "../../testbench/swap-driver.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * SIGTERM (docker stop, systemctl stop, a deploy): the process takes no new work, lets the running step
 * reach a safe point — a wait is handed over at once, a command in flight may finish within the grace
 * period — and exits within a bounded time; detached work on the host goes on.
 */
const LOCK_SECONDS = 20; // long on purpose: a hand-over must not wait for the lock to expire
const GRACE_SECONDS = 3;
const LOAD_SECONDS = 30;
let bench: Bench;
let swaps: SwapDriver;

useSwapBench(
  {
    swaps: {
      lockSeconds: LOCK_SECONDS,
      stalledCheckSeconds: 1,
      healthTimeoutSeconds: 60,
      shutdownGraceSeconds: GRACE_SECONDS,
    },
    hosts: [{ name: "gpu-1", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } }],
  },
  (b, s) => {
    bench = b;
    swaps = s;
  },
);

const addModel = (name: string) => addSimModel(bench, name);

const sim = () => bench.host("gpu-1").sim;

describe("SIGTERM", () => {
  // A failed test must not leave its bots running the swap into the next test.
  afterEach(() => bench.killChildren());

  it("during the health wait: the process exits at once and another worker resumes the wait without waiting for the lock", async () => {
    // The load outlasts starting the second bot, which took 14 s on a loaded CI machine: with a 10 s load
    // the first process had finished the wait before the SIGTERM, and there was nothing to hand over.
    await sim().setFault("sglang", { models: { "term-in-health": { loadSeconds: LOAD_SECONDS } } });
    const first = await bench.spawnBot();
    const card = await swaps.request(addModel("term-in-health"), "gpu-1");
    const swapId = swaps.swapId(card.ts);
    await swaps.approve(card.ts);
    const inHealth = await swaps.untilRecord(swapId, (r) => r.step === "health", { what: "the health wait" });
    const second = await bench.spawnBot();
    expect(
      (await swaps.record(swapId))?.healthyAt,
      "precondition: still loading at the SIGTERM",
    ).toBeUndefined();
    const signalled = Date.now();
    await first.kill("SIGTERM");
    const exitedAfter = Date.now() - signalled;
    expect(exitedAfter).toBeLessThan(GRACE_SECONDS * 1000);
    const log = await readFile(first.logPath, "utf8");
    expect(log).toMatch(/stopping: the step is handed over/);
    expect(log).toMatch(/modelswap stopped/);
    const taken = await swaps.takenBy(swapId, second.pid, signalled, 30_000);
    expect(taken).toBeGreaterThan(0);
    expect(taken).toBeLessThan(LOCK_SECONDS * 1000); // handed over, not stalled
    await swaps.outcome(card.ts, /Swapped/);
    const record = await swaps.record(swapId);
    expect(await swaps.startsOf("gpu-1", unitOf(record))).toBe(1);
    // the wait went on on the unit's clock: healthy about loadSeconds after the start, not after the hand-over
    expect(Date.parse(record!.healthyAt!) - Date.parse(inHealth.switch!.newStartedAt!)).toBeLessThan(
      (LOAD_SECONDS + 15) * 1000,
    );
    await bench.killChildren();
  }, 120_000);

  it("mid-download: exits at once, the detached download goes on, the next process finishes the swap", async () => {
    const model = addModel("term-in-download");
    bench.hub.setThrottle(1_000_000);
    const first = await bench.spawnBot();
    const card = await swaps.request(model, "gpu-1");
    const swapId = swaps.swapId(card.ts);
    await swaps.untilRecord(swapId, (r) => (r.download?.bytes ?? 0) > 0, { what: "bytes on the host" });
    const signalled = Date.now();
    await first.kill("SIGTERM");
    expect(Date.now() - signalled).toBeLessThan(GRACE_SECONDS * 1000);
    expect(await swaps.liveDownloads("gpu-1")).toBeGreaterThan(0);
    await bench.spawnBot();
    bench.hub.setThrottle(null);
    await swaps.approve(card.ts);
    await swaps.outcome(card.ts, /Swapped/);
    const downloads = (await sim().calls()).filter(
      (c) => c.cmd === "hf" && c.argv[0] === "download" && c.argv.includes(model),
    );
    expect(downloads).toHaveLength(1);
    await bench.killChildren();
  }, 120_000);

  it("while a command outlives the grace period: the process still exits in bounded time; the step is taken over later", async () => {
    await sim().hold("python", "bench_serving");
    const first = await bench.spawnBot();
    const card = await swaps.request(addModel("term-in-benchmark"), "gpu-1");
    const swapId = swaps.swapId(card.ts);
    await swaps.approve(card.ts);
    await sim().waitHeld("python");
    const signalled = Date.now();
    await first.kill("SIGTERM");
    const exitedAfter = Date.now() - signalled;
    expect(exitedAfter).toBeGreaterThanOrEqual(GRACE_SECONDS * 1000 - 200);
    expect(exitedAfter).toBeLessThan(GRACE_SECONDS * 1000 + 5000);
    expect(await readFile(first.logPath, "utf8")).toMatch(/grace period over/);
    await sim().release("python");
    await bench.spawnBot();
    await swaps.outcome(card.ts, /Swapped/, 90_000);
    expect((await swaps.record(swapId))?.outcome).toBe("succeeded");
    await bench.killChildren();
  }, 150_000);
});
