import { readFile } from "node:fs/promises";
import { afterEach, describe, expect, it } from "vitest";
import type { Bench, ChildBot } from "../../testbench/bench.ts";
import { addSimModel, type SwapDriver, unitOf } from "../../testbench/swap-driver.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * Two `modelswap` processes share one Redis. A step that runs long (an hour-long health wait, here 20 s
 * against an 8 s lock) keeps its BullMQ lock while its process lives; when the process running a swap is
 * SIGKILLed, the other finds the step stalled and finishes the swap. (The first test failed in three CI
 * runs: the run that took the job again right after the approval wait parked it had its lock untracked by
 * that parking run's end, a BullMQ race that test/e2e/job-lock.test.ts reproduces; src/queue/job-lock.ts.)
 */
const HOST = "gpu-1";
const LOCK_SECONDS = 8;
const STALLED_CHECK_SECONDS = 1;
let bench: Bench;
let swaps: SwapDriver;

useSwapBench(
  {
    swaps: {
      lockSeconds: LOCK_SECONDS,
      stalledCheckSeconds: STALLED_CHECK_SECONDS,
      healthTimeoutSeconds: 60,
    },
    hosts: [{ name: HOST, gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } }],
  },
  (b, s) => {
    bench = b;
    swaps = s;
  },
);

const addModel = (name: string) => addSimModel(bench, name);

// a test that fails before its own killChildren must not leave its bots to take the next test's job
afterEach(async () => {
  await bench.killChildren();
});

async function stalledLines(bot: ChildBot, swapId: string): Promise<string[]> {
  const log = await readFile(bot.logPath, "utf8");
  return log.split("\n").filter((l) => l.includes("stalled") && l.includes(swapId));
}

/** Whether `bot` logged the end of the swap's health step ("swap step done" with step health). */
async function healthEnded(bot: ChildBot, swapId: string): Promise<boolean> {
  const log = await readFile(bot.logPath, "utf8");
  return log
    .split("\n")
    .some((l) => l.includes(swapId) && l.includes('"swap step done"') && l.includes('"step":"health"'));
}

describe("two workers on one Redis", () => {
  it("a step longer than the lock keeps it: nobody else runs it, nothing is stalled", async () => {
    const model = addModel("long-health");
    await bench.host(HOST).sim.setFault("sglang", { models: { "long-health": { loadSeconds: 20 } } });
    const a = await bench.spawnBot();
    const b = await bench.spawnBot();
    const card = await swaps.request(model, HOST);
    const swapId = swaps.swapId(card.ts);
    await swaps.approve(card.ts);
    const inHealth = await swaps.untilRecord(swapId, (r) => r.step === "health", { what: "the health wait" });
    const runner = await swaps.processedBy(swapId);
    await swaps.outcome(card.ts, /Swapped/);
    const record = await swaps.record(swapId);
    // the health wait outlived the lock twice over, in one process, and was never taken from it
    expect(Date.parse(record!.healthyAt!) - Date.parse(inHealth.switch!.newStartedAt!)).toBeGreaterThan(
      2 * LOCK_SECONDS * 1000,
    );
    expect([...(await stalledLines(a, swapId)), ...(await stalledLines(b, swapId))]).toEqual([]);
    // the long step ended in the process that began it, and only there. (Not "the job's last taker is the
    // runner": a step after it that is retried later, as a host command that fails under load is, goes
    // back to the queue and either bot may take it; CI's loaded runs showed the other bot there twice.)
    const [mine, theirs] = runner?.endsWith(`:${a.pid}`) ? [a, b] : [b, a];
    expect(runner?.endsWith(`:${mine.pid}`), `the job names its worker (${runner})`).toBe(true);
    expect(await healthEnded(mine, swapId)).toBe(true);
    expect(await healthEnded(theirs, swapId)).toBe(false);
    expect(await swaps.startsOf(HOST, unitOf(record))).toBe(1);
    await bench.killChildren();
  }, 120_000);

  it("the one running a swap is killed: the other takes it over within the stall interval and finishes it", async () => {
    const model = addModel("takeover");
    await bench.host(HOST).sim.setFault("sglang", { models: { takeover: { loadSeconds: 8 } } });
    const bots = [await bench.spawnBot(), await bench.spawnBot()];
    const card = await swaps.request(model, HOST);
    const swapId = swaps.swapId(card.ts);
    await swaps.approve(card.ts);
    await swaps.untilRecord(swapId, (r) => r.step === "health", { what: "the health wait" });
    const runner = await swaps.processedBy(swapId);
    const victim = bots.find((b) => runner?.endsWith(`:${b.pid}`));
    const survivor = bots.find((b) => b !== victim);
    expect(victim, `the job names its worker (${runner})`).toBeDefined();
    await victim!.kill("SIGKILL");
    const killedAt = Date.now();
    const takenAfter = await swaps.takenBy(swapId, survivor!.pid, killedAt, 60_000);
    expect(takenAfter, "the survivor took the job").toBeGreaterThan(0);
    // BullMQ: the lock expires (lockSeconds), then a stalled check notices it (every stalledCheckSeconds,
    // it needs two looks); a little more for a busy machine
    expect(takenAfter).toBeLessThan((LOCK_SECONDS + 2 * STALLED_CHECK_SECONDS + 5) * 1000);
    await swaps.outcome(card.ts, /Swapped/);
    const record = await swaps.record(swapId);
    expect(record?.outcome).toBe("succeeded");
    expect(await swaps.startsOf(HOST, unitOf(record))).toBe(1);
    expect(swaps.cardsOf(swapId)).toHaveLength(1);
    expect(await stalledLines(survivor!, swapId)).not.toEqual([]);
    await bench.killChildren();
  }, 120_000);
});
