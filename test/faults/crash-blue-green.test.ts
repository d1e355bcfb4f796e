import { afterEach, describe, expect, it } from "vitest";
import { type Bench, CHANNEL, SIM_ENGINES, USERS } from "../../testbench/bench.ts";
import { type ClientStream, startClientStream } from "../../testbench/client-stream.ts";
import { slotStates, watchSlots, withoutReadySlot } from "../../testbench/front-door-watch.ts";
import { addSimModel, type SwapDriver, unitOf } from "../../testbench/swap-driver.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * The bot is a real `modelswap start` process behind which a blue/green swap runs on a host with a real
 * HAProxy (the old model on 4 of 8 GPUs, the new one beside it), SIGKILLed at each step that steers the
 * front door — inside the flip, in the flip-back window while the old unit drains, and inside a flip
 * back — then a new process is started. A steady stream of clients goes through the front door all along: none gets an
 * error, the front door is never left with no slot ready, it ends on the new unit's slot, and each unit
 * is started, and the old one stopped, exactly once.
 */
const HOST = "gpu-1";
const SHARED = "gpu-2";
let bench: Bench;
let swaps: SwapDriver;

useSwapBench(
  {
    // the clients' answers are as long in seconds as their comments say: the sims' own token pace
    engineTiming: SIM_ENGINES,
    swaps: {
      lockSeconds: 5,
      stalledCheckSeconds: 1,
      healthTimeoutSeconds: 60,
      flipBackSeconds: 10,
      restartAtFullMemory: true,
    },
    hosts: [
      {
        name: HOST,
        gpus: "8x-rtx-pro-6000-blackwell",
        serving: { preset: "qwen3-fp8-dense", tp: 4 },
        frontDoor: { holdSeconds: 300, drainSeconds: 60, standby: true },
      },
      {
        // its model holds every GPU at --mem-fraction-static 0.45: the new one shares them, then restarts
        // at full memory once the old one has stopped (swaps.restartAtFullMemory)
        name: SHARED,
        gpus: "8x-rtx-pro-6000-blackwell",
        serving: { preset: "qwen3-fp8-dense", memFraction: 0.45 },
        frontDoor: { holdSeconds: 300, drainSeconds: 60, standby: true },
        faults: { sglang: { loadSeconds: 4 } },
      },
    ],
  },
  (b, s) => {
    bench = b;
    swaps = s;
  },
);

const sim = () => bench.host(HOST).sim;
let streams: ClientStream[] = [];
afterEach(async () => {
  await Promise.all(streams.map((s) => s.stop()));
  streams = [];
  await bench.killChildren();
  await sim().release("socat");
  await bench.host(SHARED).sim.release("socat");
});

/** A fresh bot, a blue/green swap requested and approved, clients streaming through the front door. */
async function approvedSwap(model: string) {
  await bench.spawnBot();
  const clients = startClientStream(bench.host(HOST).frontDoor!.url, { everyMs: 200, maxTokens: 100 });
  streams.push(clients);
  const watch = watchSlots(bench, HOST);
  const card = await swaps.request(model, HOST);
  const swapId = swaps.swapId(card.ts);
  expect(JSON.stringify(await swaps.plan(card.ts))).toMatch(/blue\/green on spare GPUs/);
  const record = await swaps.record(swapId);
  const oldUnit = record?.previous?.unit;
  const to = record?.plan?.clients?.frontDoor?.server;
  if (oldUnit === undefined || to === undefined) throw new Error("the plan names no slots or old unit");
  const oldStops = await swaps.stopsOf(HOST, oldUnit);
  await swaps.approve(card.ts);
  return { cardTs: card.ts, swapId, oldUnit, oldStops, to, clients, watch };
}

async function expectUnnoticed(swap: Awaited<ReturnType<typeof approvedSwap>>): Promise<void> {
  await swaps.outcome(swap.cardTs, /Swapped/, 180_000);
  const record = await swaps.record(swap.swapId);
  const report = await swap.clients.stop();
  const seen = await swap.watch.stop();
  expect(report.failed, JSON.stringify(report.answers.filter((a) => a.status !== 200).slice(0, 3))).toBe(0);
  expect(report.answered).toBeGreaterThan(20);
  expect(withoutReadySlot(seen)).toEqual([]);
  // the hold never took part: nobody waited for a load
  expect(seen.every((s) => s.hold !== "ready")).toBe(true);
  const states = await slotStates(bench, HOST);
  expect(states[swap.to]).toBe("ready");
  expect(Object.entries(states).filter(([, s]) => s === "ready")).toHaveLength(1);
  expect(await swaps.stopsOf(HOST, swap.oldUnit)).toBe(swap.oldStops + 1);
  expect(await swaps.startsOf(HOST, unitOf(record))).toBe(1);
  expect(record?.flip?.retiredAt).toBeDefined();
  expect(swaps.cardsOf(swap.swapId)).toHaveLength(1);
}

describe("a worker killed while the front door steers a blue/green swap, then restarted", () => {
  it("inside the flip: the new worker flips again, and no client noticed either flip", async () => {
    const swap = await approvedSwap(addSimModel(bench, "bg-crash-flip"));
    // nothing steers the front door between the start beside and the flip: the next Runtime API call is it
    await swaps.untilRecord(swap.swapId, (r) => r.step === "health", { what: "the health wait" });
    await sim().hold("socat");
    await sim().waitHeld("socat");
    expect((await swaps.record(swap.swapId))?.step).toBe("release");
    await bench.killChildren();
    await sim().release("socat");
    await bench.spawnBot();
    await expectUnnoticed(swap);
  }, 240_000);

  it("in the flip-back window: the new worker keeps the window and the drain from the flip, then stops the old unit once", async () => {
    const swap = await approvedSwap(addSimModel(bench, "bg-crash-window"));
    const flipped = await swaps.untilRecord(swap.swapId, (r) => r.step === "retire", {
      what: "the flip-back window",
    });
    await bench.killChildren();
    await bench.spawnBot();
    await expectUnnoticed(swap);
    const record = await swaps.record(swap.swapId);
    expect(record?.flip?.flippedAt).toBe(flipped.flip?.flippedAt);
  }, 240_000);

  it("inside a flip back: the new worker flips back again; the old unit never stopped, the new one stopped once", async () => {
    const swap = await approvedSwap(addSimModel(bench, "bg-crash-back"));
    // once the old unit's last requests have ended, the window looks at the front door no more: the next
    // Runtime API call is the flip back
    await swaps.untilRecord(swap.swapId, (r) => r.flip?.drainedAt !== undefined, {
      what: "the old unit drained in the flip-back window",
    });
    await sim().hold("socat");
    const asked = await bench.slack.command(USERS.alice, `cancel ${swap.swapId}`, { channel: CHANNEL });
    expect(asked.ackResponse?.text).toMatch(/flips back to `[^`]+`, still loaded, in about a second/);
    await sim().waitHeld("socat");
    expect((await swaps.record(swap.swapId))?.step).toBe("rollback");
    await bench.killChildren();
    await sim().release("socat");
    await bench.spawnBot();
    await swaps.outcome(swap.cardTs, /Cancelled/, 180_000);
    const record = await swaps.record(swap.swapId);
    const report = await swap.clients.stop();
    const seen = await swap.watch.stop();
    expect(report.failed, JSON.stringify(report.answers.filter((a) => a.status !== 200).slice(0, 3))).toBe(0);
    expect(withoutReadySlot(seen)).toEqual([]);
    const states = await slotStates(bench, HOST);
    expect(states[record!.flip!.from]).toBe("ready");
    expect(Object.entries(states).filter(([, s]) => s === "ready")).toHaveLength(1);
    expect(record?.flip?.flippedBackAt).toBeDefined();
    expect(record?.outcome).toBe("cancelled");
    // the old unit served all along; the new one started once and stopped once
    expect(await swaps.stopsOf(HOST, swap.oldUnit)).toBe(swap.oldStops);
    expect((await sim().unitState(swap.oldUnit)).activeState).toBe("active");
    expect(await swaps.startsOf(HOST, unitOf(record))).toBe(1);
    expect(await swaps.stopsOf(HOST, unitOf(record))).toBe(1);
    expect(swaps.cardsOf(swap.swapId)).toHaveLength(1);
  }, 240_000);

  it("inside a restart at full memory: the new worker waits for the restarted unit (no second restart) and releases the held requests", async () => {
    await bench.spawnBot();
    const clients = startClientStream(bench.host(SHARED).frontDoor!.url, { everyMs: 200, maxTokens: 100 });
    streams.push(clients);
    const watch = watchSlots(bench, SHARED);
    const card = await swaps.request(addSimModel(bench, "bg-crash-restart"), SHARED);
    const swapId = swaps.swapId(card.ts);
    expect(JSON.stringify(await swaps.plan(card.ts))).toMatch(/restarts at full memory/);
    await swaps.approve(card.ts);
    // killed while the unit loads at full memory, new requests held
    await swaps.untilRecord(swapId, (r) => r.restart?.restartedAt !== undefined, {
      what: "the restart at full memory under way",
      timeoutMs: 120_000,
    });
    await bench.killChildren();
    await bench.spawnBot();
    await swaps.outcome(card.ts, /Swapped/, 180_000);
    const record = await swaps.record(swapId);
    const report = await clients.stop();
    const seen = await watch.stop();
    expect(report.failed, JSON.stringify(report.answers.filter((a) => a.status !== 200).slice(0, 3))).toBe(0);
    expect(withoutReadySlot(seen)).toEqual([]);
    expect(record?.restart?.releasedAt).toBeDefined();
    expect(record?.restart?.failed).toBeUndefined();
    // started beside the old unit, then once at full memory: the new worker did not restart it again
    expect(await swaps.startsOf(SHARED, unitOf(record))).toBe(2);
    const states = await slotStates(bench, SHARED);
    expect(states[record!.flip!.to]).toBe("ready");
    expect(Object.entries(states).filter(([, s]) => s === "ready")).toHaveLength(1);
  }, 240_000);
});
