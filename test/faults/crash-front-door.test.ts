import { afterEach, describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import { SIM_ENGINES } from "../../testbench/bench.ts";
import { type ClientStream, startClientStream } from "../../testbench/client-stream.ts";
import { slotStates, watchSlots, withoutReadySlot } from "../../testbench/front-door-watch.ts";
import { addSimModel, type SwapDriver, unitOf } from "../../testbench/swap-driver.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * The bot is a real `modelswap start` process behind which a cold swap runs on a host with a real
 * HAProxy, SIGKILLed at each step that steers the front door — while the old unit drains, while new
 * requests are held (the new model loading), and inside the release — then a new process is started.
 * A steady stream of clients goes through the front door all along: none gets an error (the hold outlasts
 * the takeover), the front door is never left with no slot ready, it ends as it was (blue ready, hold
 * out), and the old unit is stopped exactly once.
 */
const HOST = "gpu-1";
let bench: Bench;
let swaps: SwapDriver;

useSwapBench(
  {
    // the clients' answers are as long in seconds as their comments say: the sims' own token pace
    engineTiming: SIM_ENGINES,
    swaps: { lockSeconds: 5, stalledCheckSeconds: 1, healthTimeoutSeconds: 60 },
    hosts: [
      {
        name: HOST,
        gpus: "8x-rtx-pro-6000-blackwell",
        serving: { preset: "qwen3-fp8-dense" },
        frontDoor: { holdSeconds: 300, drainSeconds: 60 },
      },
    ],
  },
  (b, s) => {
    bench = b;
    swaps = s;
  },
);

const sim = () => bench.host(HOST).sim;
const url = () => bench.host(HOST).frontDoor!.url;
let streams: ClientStream[] = [];
afterEach(async () => {
  await Promise.all(streams.map((s) => s.stop()));
  streams = [];
  await bench.killChildren();
  await sim().release("socat");
});

/** A fresh bot, a swap requested and approved, clients streaming through the front door. */
async function approvedSwap(model: string, options: { longAnswers?: boolean } = {}) {
  await bench.spawnBot();
  const clients = startClientStream(url(), { everyMs: 200, maxTokens: 100 });
  streams.push(clients);
  // answers of 4000 tokens (8 s), two a second: the old unit's slot is busy when the drain begins
  if (options.longAnswers === true)
    streams.push(startClientStream(url(), { everyMs: 500, maxTokens: 4000, long: true }));
  const watch = watchSlots(bench, HOST);
  const card = await swaps.request(model, HOST);
  const swapId = swaps.swapId(card.ts);
  await swaps.plan(card.ts);
  const oldUnit = (await swaps.record(swapId))?.previous?.unit;
  if (oldUnit === undefined) throw new Error("the plan names no unit serving before");
  const oldStops = await swaps.stopsOf(HOST, oldUnit);
  await swaps.approve(card.ts);
  return { cardTs: card.ts, swapId, oldUnit, oldStops, clients, watch };
}

async function expectUnnoticed(swap: Awaited<ReturnType<typeof approvedSwap>>): Promise<void> {
  await swaps.outcome(swap.cardTs, /Swapped/, 180_000);
  const record = await swaps.record(swap.swapId);
  const report = await swap.clients.stop();
  const seen = await swap.watch.stop();
  expect(report.failed, JSON.stringify(report.answers.filter((a) => a.status !== 200).slice(0, 3))).toBe(0);
  expect(report.answered).toBeGreaterThan(20);
  expect(withoutReadySlot(seen)).toEqual([]);
  expect(await slotStates(bench, HOST)).toMatchObject({ blue: "ready", hold: "maint" });
  expect(await swaps.stopsOf(HOST, swap.oldUnit)).toBe(swap.oldStops + 1);
  expect(await swaps.startsOf(HOST, unitOf(record))).toBe(1);
  expect(record?.frontDoor?.releasedAt).toBeDefined();
  expect(swaps.cardsOf(swap.swapId)).toHaveLength(1);
}

describe("a worker killed while the front door steers a cold swap, then restarted", () => {
  it("during the drain: the new worker waits for the same drain (bounded from the hold), then stops the old unit once", async () => {
    const swap = await approvedSwap(addSimModel(bench, "fd-crash-drain"), { longAnswers: true });
    const draining = await swaps.untilRecord(
      swap.swapId,
      (r) => r.frontDoor !== undefined && r.frontDoor.drainedAt === undefined,
      { what: "the drain" },
    );
    expect(await slotStates(bench, HOST)).toMatchObject({ blue: "drain", hold: "ready" });
    // no more long answers, so the new worker's drain can end (those held meanwhile wait for the release)
    const longAnswers = streams.pop()!;
    longAnswers.halt();
    await bench.killChildren();
    await bench.spawnBot();
    await expectUnnoticed(swap);
    // the long answers in flight at the drain ended whole on the old unit; the held ones on the new
    const long = await longAnswers.stop();
    expect(long.failed).toBe(0);
    expect(long.answered).toBeGreaterThan(2);
    const record = await swaps.record(swap.swapId);
    // the same hold: its start was kept, the drain was not begun again
    expect(record?.frontDoor?.heldAt).toBe(draining.frontDoor?.heldAt);
    expect(record?.frontDoor?.cut).toBe(0);
  }, 240_000);

  it("while new requests are held and the new model loads: they are sent to it once the new worker has checked it", async () => {
    await sim().setFault("sglang", { models: { "fd-crash-held": { loadSeconds: 6 } } });
    const swap = await approvedSwap(addSimModel(bench, "fd-crash-held"));
    await swaps.untilRecord(swap.swapId, (r) => r.step === "health", { what: "the health wait" });
    expect(await slotStates(bench, HOST)).toMatchObject({ blue: "drain", hold: "ready" });
    await bench.killChildren();
    await bench.spawnBot();
    await expectUnnoticed(swap);
  }, 240_000);

  it("inside the release: the new worker releases again, and the held requests are answered", async () => {
    const swap = await approvedSwap(addSimModel(bench, "fd-crash-release"));
    // nothing steers the front door between the switch and the release: the next Runtime API call is it
    await swaps.untilRecord(swap.swapId, (r) => r.step === "health", { what: "the health wait" });
    await sim().hold("socat");
    await sim().waitHeld("socat");
    const record = await swaps.record(swap.swapId);
    expect(record?.step).toBe("release");
    await bench.killChildren();
    await sim().release("socat");
    await bench.spawnBot();
    await expectUnnoticed(swap);
  }, 240_000);
});
