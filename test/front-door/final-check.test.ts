import { afterEach, describe, expect, it } from "vitest";
import { type Bench, CHANNEL, SIM_ENGINES, USERS } from "../../testbench/bench.ts";
import { type ClientStream, startClientStream } from "../../testbench/client-stream.ts";
import { slotStates } from "../../testbench/front-door-watch.ts";
import { addSimModel, type SwapDriver, unitOf } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * What the thread says is what a last check of the host saw (issue 27 §1). Before an outcome is written,
 * the unit it names must be active with the process it was checked with, answer its health probe and a
 * sanity prompt through the front door, and be the front door's ready slot; a unit is stopped only after
 * the one replacing it passed that check. Each case below was a lie before: a blue/green swap claimed
 * success and stopped the old unit although the new one had died in the flip-back window; a flip back
 * went to an old unit that had died and stopped the healthy new one; a cold swap whose new unit died after
 * its checks said it served.
 */
let bench: Bench;
let swaps: SwapDriver;
const FLIP_BACK_SECONDS = 20;

useSwapBench(
  {
    // the clients' answers are as long in seconds as their comments say: the sims' own token pace
    engineTiming: SIM_ENGINES,
    swaps: { healthTimeoutSeconds: 60, flipBackSeconds: FLIP_BACK_SECONDS },
    hosts: [
      {
        name: "gpu-1",
        gpus: "8x-rtx-pro-6000-blackwell",
        serving: { preset: "qwen3-fp8-dense", tp: 4 },
        frontDoor: { holdSeconds: 300, drainSeconds: 5, standby: true },
      },
      { name: "gpu-3", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } },
    ],
    startBot: true,
  },
  (b, s) => {
    bench = b;
    swaps = s;
  },
);

let stream: ClientStream | undefined;
afterEach(async () => {
  await stream?.stop();
  stream = undefined;
  for (const host of ["gpu-1", "gpu-3"]) {
    await bench.host(host).sim.release("python");
    await bench.host(host).sim.clearFaults();
  }
});

const sim = (host = "gpu-1") => bench.host(host).sim;

/** Kills a unit's process the way a crash would; with crash-on-start set for its model it stays down. */
async function crash(host: string, unit: string): Promise<number> {
  const { mainPid } = await sim(host).unitState(unit);
  expect(mainPid).toBeGreaterThan(0);
  process.kill(mainPid, "SIGKILL");
  await until(async () => (await sim(host).unitState(unit)).mainPid !== mainPid, {
    what: `${unit}'s process to end`,
  });
  return mainPid;
}

/** A blue/green swap of `model` requested, approved and flipped; the old unit's state then. */
async function flipped(model: string) {
  const card = await swaps.request(addSimModel(bench, model), "gpu-1");
  const id = swaps.swapId(card.ts);
  expect(JSON.stringify(await swaps.plan(card.ts))).toMatch(/blue\/green on spare GPUs/);
  await swaps.approve(card.ts);
  const record = await swaps.untilRecord(id, (r) => r.step === "retire" && r.flip !== undefined, {
    what: "the flip-back window",
    timeoutMs: 120_000,
  });
  const oldUnit = record.previous!.unit;
  const old = await sim().unitState(oldUnit);
  expect(old.activeState).toBe("active");
  return { card, id, record, oldUnit, oldPid: old.mainPid, oldStops: await swaps.stopsOf("gpu-1", oldUnit) };
}

describe("blue/green: a unit that dies in the flip-back window", () => {
  it("the new one: the swap flips back to the old unit, still loaded, and says so; it never claims success", async () => {
    const swap = await flipped("fc-new-dies");
    const newUnit = unitOf(swap.record);
    await sim().setFault("sglang", { models: { "fc-new-dies": { mode: "crash-on-start" } } });
    await crash("gpu-1", newUnit);
    const died = Date.now();
    stream = startClientStream(bench.host("gpu-1").frontDoor!.url, { everyMs: 150, maxTokens: 50 });
    await swaps.outcome(swap.card.ts, /Rolled back|Swapped|Failed/, 120_000);
    const record = await swaps.record(swap.id);
    expect(record?.outcome).toBe("rolled_back");
    // well before the window's end: each look in the window sees the new unit's process
    expect(Date.parse(record!.flip!.flippedBackAt!) - died).toBeLessThan(FLIP_BACK_SECONDS * 1000 - 10_000);
    // the old unit never stopped: same process, no stop in its journal, its slot takes the requests
    const old = await sim().unitState(swap.oldUnit);
    expect(old).toMatchObject({ activeState: "active", mainPid: swap.oldPid });
    expect(await swaps.stopsOf("gpu-1", swap.oldUnit)).toBe(swap.oldStops);
    expect((await slotStates(bench, "gpu-1"))[record!.flip!.from]).toBe("ready");
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const report = await stream.stop();
    stream = undefined;
    const after = report.answers.filter((a) => a.sentAt > Date.parse(record!.flip!.flippedBackAt!) + 500);
    expect(after.length).toBeGreaterThan(0);
    expect(after.filter((a) => a.status !== 200)).toEqual([]);
    const thread = swaps.threadText(swap.card.ts);
    expect(thread).toMatch(new RegExp(`\`${newUnit}\` stopped serving in the flip-back window`));
    expect(thread).not.toMatch(/now serves/);
    expect(record?.finalCheck).toMatchObject({ ok: true, unit: swap.oldUnit });
    expect(thread).toMatch(/Checked at \d\d:\d\d:\d\d UTC: `[^`]+` active \(MainPID \d+\)/);
  }, 240_000);

  it("the old one, before a rollback: there is nothing to flip back to, so the new unit keeps serving and the thread says why", async () => {
    const swap = await flipped("fc-old-dies");
    const newUnit = unitOf(swap.record);
    // the old unit's model, by its path on the host (the sim's faults match any part of it)
    const oldModel = /--model-path (\S+)/
      .exec(swap.record.plan!.host.currentUnit.text)![1]!
      .split("/")
      .at(-1)!;
    await sim().setFault("sglang", { models: { [oldModel]: { mode: "crash-on-start" } } });
    await crash("gpu-1", swap.oldUnit);
    stream = startClientStream(bench.host("gpu-1").frontDoor!.url, { everyMs: 150, maxTokens: 50 });
    const asked = await bench.slack.command(USERS.bob, "rollback gpu-1", { channel: CHANNEL });
    expect(asked.ackResponse?.text).toMatch(/Flipping \*gpu-1\* back/);
    await swaps.outcome(swap.card.ts, /Rolled back|Swapped|Failed|Cancelled/, 120_000);
    const record = await swaps.record(swap.id);
    expect(record?.outcome).toBe("succeeded");
    expect(record?.flip?.flippedBackAt).toBeUndefined();
    expect(record?.cancel?.refused).toMatch(new RegExp(`${swap.oldUnit}`));
    expect((await sim().unitState(newUnit)).activeState).toBe("active");
    expect((await slotStates(bench, "gpu-1"))[record!.flip!.to]).toBe("ready");
    const report = await stream.stop();
    stream = undefined;
    expect(report.answered).toBeGreaterThan(0);
    expect(report.answers.filter((a) => a.status !== 200)).toEqual([]);
    const thread = swaps.threadText(swap.card.ts);
    expect(thread).toMatch(
      new RegExp(`Not flipped back: \`${swap.oldUnit}\` no longer serves .*; \`${newUnit}\` keeps serving`),
    );
    expect(record?.finalCheck).toMatchObject({ ok: true, unit: newUnit });
  }, 240_000);
});

describe("a cold swap whose new unit dies after its checks", () => {
  it("is not called a success: the last check sees it down, and the old unit is put back", async () => {
    const card = await swaps.request(addSimModel(bench, "fc-cold-dies"), "gpu-3");
    const id = swaps.swapId(card.ts);
    await sim("gpu-3").hold("python", "bench_serving");
    await swaps.approve(card.ts);
    await sim("gpu-3").waitHeld("python");
    const record0 = await swaps.record(id);
    await sim("gpu-3").setFault("sglang", { models: { "fc-cold-dies": { mode: "crash-on-start" } } });
    await crash("gpu-3", unitOf(record0));
    await sim("gpu-3").release("python");
    await swaps.outcome(card.ts, /Rolled back|Swapped|Failed/, 120_000);
    const record = await swaps.record(id);
    expect(record?.outcome).toBe("rolled_back");
    expect(record?.reason).toMatch(
      new RegExp(
        `the last check before the end found: \`${unitOf(record)}\` (is not active|has no process|restarted)`,
      ),
    );
    expect((await sim("gpu-3").unitState(record!.previous!.unit)).activeState).toBe("active");
    expect(record?.finalCheck).toMatchObject({ ok: true, unit: record!.previous!.unit });
    expect(swaps.threadText(card.ts)).not.toMatch(/now serves/);
  }, 240_000);
});
