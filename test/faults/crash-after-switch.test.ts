import { describe, expect, it } from "vitest";
import { type Bench, CHANNEL } from "../../testbench/bench.ts";
import { addSimModel, type SwapDriver, unitOf } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * The bot is a real `modelswap start` process, SIGKILLed while a swap is switching the service or
 * checking the new one (health, sanity, benchmark), then a new process is started. The switch never
 * runs twice: the old unit is stopped once, the new one started once; a half-done switch is completed.
 */
const HOST = "gpu-1";
let bench: Bench;
let swaps: SwapDriver;

useSwapBench(
  {
    swaps: {
      lockSeconds: 5,
      stalledCheckSeconds: 1,
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

const sim = () => bench.host(HOST).sim;

interface ApprovedSwap {
  cardTs: string;
  swapId: string;
  /** The unit serving before: the one the switch must stop exactly once. */
  oldUnit: string;
  oldStops: number;
}

/** Starts a swap under a fresh bot and approves its plan. */
async function approvedSwap(model: string): Promise<ApprovedSwap> {
  await bench.spawnBot();
  const card = await swaps.request(model, HOST);
  const swapId = swaps.swapId(card.ts);
  await swaps.plan(card.ts);
  const oldUnit = (await swaps.record(swapId))?.previous?.unit;
  if (oldUnit === undefined) throw new Error("the plan names no unit serving before");
  const oldStops = await swaps.stopsOf(HOST, oldUnit);
  await swaps.approve(card.ts);
  return { cardTs: card.ts, swapId, oldUnit, oldStops };
}

/** After the crash and restart: swapped, the old unit stopped once and disabled, the new started once. */
async function expectSwitchedOnce({ cardTs, swapId, oldUnit, oldStops }: ApprovedSwap): Promise<void> {
  await swaps.outcome(cardTs, /Swapped/);
  const record = await swaps.record(swapId);
  expect(record?.outcome).toBe("succeeded");
  expect(record?.downtimeSeconds).toBeGreaterThan(0);
  const unit = unitOf(record);
  expect(await swaps.startsOf(HOST, unit)).toBe(1);
  expect((await sim().unitState(unit)).activeState).toBe("active");
  expect(await swaps.stopsOf(HOST, oldUnit)).toBe(oldStops + 1);
  expect((await sim().unitState(oldUnit)).unitFileState).toBe("disabled");
  expect(swaps.cardsOf(swapId)).toHaveLength(1);
  expect(swaps.plansOf(cardTs)).toHaveLength(1);
  await bench.killChildren();
}

describe("a worker killed after the approval, then restarted", () => {
  it("between stopping the old unit and starting the new one: the switch is completed, not redone", async () => {
    await sim().hold("systemctl", " enable --now");
    const swap = await approvedSwap(addModel("crash-mid-switch"));
    await sim().waitHeld("systemctl");
    expect((await sim().unitState(swap.oldUnit)).activeState).not.toBe("active"); // half done: nothing serves
    await bench.killChildren();
    // the held `systemctl enable --now` dies with the session: it never ran
    await sim().exec(`pkill -KILL -f ${JSON.stringify(`${sim().binDir}/systemctl enable --now`)} || true`);
    await sim().release("systemctl");
    await bench.spawnBot();
    await expectSwitchedOnce(swap);
    const record = await swaps.record(swap.swapId);
    expect(await swaps.startsOf(HOST, unitOf(record))).toBe(1);
  }, 150_000);

  it("while `systemctl enable --now` runs (it completes with nobody watching): the new unit is not started again", async () => {
    await sim().hold("systemctl", " enable --now");
    const swap = await approvedSwap(addModel("crash-in-enable"));
    await sim().waitHeld("systemctl");
    await bench.killChildren();
    await sim().release("systemctl"); // the command goes on and starts the unit
    await bench.spawnBot();
    await expectSwitchedOnce(swap);
  }, 150_000);

  it("while the new model loads (health): the wait resumes on the same clock, the unit is not restarted", async () => {
    await sim().setFault("sglang", { models: { "crash-in-health": { loadSeconds: 6 } } });
    const swap = await approvedSwap(addModel("crash-in-health"));
    const inHealth = await swaps.untilRecord(swap.swapId, (r) => r.step === "health", {
      what: "the health wait",
    });
    // the wait is under way: the new unit was polled on the host at least once since
    const unit = unitOf(inHealth);
    const polled = (await sim().calls()).length;
    await until(
      async () =>
        (await sim().calls())
          .slice(polled)
          .some((c) => c.cmd === "systemctl" && c.argv[0] === "is-active" && c.argv.includes(unit)),
      { what: `a health poll of ${unit}` },
    );
    // and the kill lands inside it (the model loads for 6 s)
    const beforeKill = await swaps.record(swap.swapId);
    expect(beforeKill?.step).toBe("health");
    expect(beforeKill?.healthyAt).toBeUndefined();
    await bench.killChildren();
    await bench.spawnBot();
    await expectSwitchedOnce(swap);
    await sim().setFault("sglang", null);
  }, 150_000);

  it("during the sanity check: it is run again by the new process", async () => {
    await sim().hold("curl", "/generate");
    const swap = await approvedSwap(addModel("crash-in-sanity"));
    await sim().waitHeld("curl");
    expect((await swaps.record(swap.swapId))?.step).toBe("sanity");
    await bench.killChildren();
    await sim().release("curl");
    await bench.spawnBot();
    await expectSwitchedOnce(swap);
    const record = await swaps.record(swap.swapId);
    expect(record?.sanity?.ok).toBe(true);
  }, 150_000);

  it("during the benchmark: the leftover run is stopped, the benchmark runs again and is reported once", async () => {
    await sim().hold("python", "bench_serving");
    const swap = await approvedSwap(addModel("crash-in-benchmark"));
    await sim().waitHeld("python");
    await bench.killChildren();
    await sim().release("python");
    await bench.spawnBot();
    await expectSwitchedOnce(swap);
    const tables = swaps.threadText(swap.cardTs).match(/tok\/s/g) ?? [];
    expect(tables.length).toBeGreaterThan(0);
    const benchmarkPosts = bench.slack
      .thread(CHANNEL, swap.cardTs)
      .filter((m) => /Benchmark/i.test(m.text) && /tok\/s/.test(`${m.text}${JSON.stringify(m.blocks)}`));
    expect(benchmarkPosts).toHaveLength(1);
  }, 150_000);
});
