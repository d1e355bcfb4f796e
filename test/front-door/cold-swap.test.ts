import { afterEach, describe, expect, it } from "vitest";
import { type Bench, CHANNEL, SIM_ENGINES, USERS } from "../../testbench/bench.ts";
import {
  type ClientStream,
  type ClientStreamReport,
  startClientStream,
} from "../../testbench/client-stream.ts";
import { slotStates, watchSlots as watchGpu1, withoutReadySlot } from "../../testbench/front-door-watch.ts";
import { addSimModel, type SwapDriver } from "../../testbench/swap-driver.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * A cold swap behind a real HAProxy, with a steady stream of clients through it (a request every 150 ms,
 * each 200 tokens: a few are always in flight). The old unit drains while new requests are held; the new
 * unit loads, is checked directly, and only then gets the held requests: no client sees an error. A host
 * without a front door, in the same bench, is the baseline: its clients get refused connections.
 */
let bench: Bench;
let swaps: SwapDriver;
const measured: Record<string, unknown> = {};

useSwapBench(
  {
    // the clients' answers are as long in seconds as their comments say: the sims' own token pace
    engineTiming: SIM_ENGINES,
    swaps: { healthTimeoutSeconds: 60 },
    hosts: [
      {
        name: "gpu-1",
        gpus: "8x-rtx-pro-6000-blackwell",
        serving: { preset: "qwen3-fp8-dense" },
        frontDoor: { holdSeconds: 300, drainSeconds: 20 },
        // a load long enough that the hold is seen: 3 s of weights (SGLang's real ones take minutes)
        faults: { sglang: { loadSeconds: 3 } },
        waitHealthy: true,
      },
      {
        name: "gpu-2",
        gpus: "8x-rtx-pro-6000-blackwell",
        serving: { preset: "qwen3-fp8-dense" },
        faults: { sglang: { loadSeconds: 3 } },
        waitHealthy: true,
      },
    ],
    startBot: true,
  },
  (b, s) => {
    bench = b;
    swaps = s;
    addSimModel(b, "cold-good");
    addSimModel(b, "cold-nan");
    addSimModel(b, "direct-good");
  },
);

let stream: ClientStream | undefined;
afterEach(async () => {
  await stream?.stop();
  stream = undefined;
});

const watchSlots = () => watchGpu1(bench, "gpu-1");
const slots = () => slotStates(bench, "gpu-1");

/** Requests answered by `model`, in the order they were sent. */
function servedOrder(report: ClientStreamReport): string[] {
  return [...report.answers].sort((a, b) => a.sentAt - b.sentAt).map((a) => a.model);
}

function summary(report: ClientStreamReport): Record<string, number> {
  const { sent, failed, maxGapMs, p50Ms, p99Ms, maxMs } = report;
  return { sent, failed, maxGapMs, p50Ms, p99Ms, maxMs };
}

describe("a cold swap behind the front door", () => {
  it("holds new requests while the old unit drains and the new one loads: no client sees an error", async () => {
    const before = (await swaps.store().then((s) => s.hosts.serving("gpu-1")))?.repo;
    stream = startClientStream(bench.host("gpu-1").frontDoor!.url, { everyMs: 150, maxTokens: 200 });
    // long answers (1500 tokens, 3 s) one a second: a few are always in flight when the drain begins
    const long = startClientStream(bench.host("gpu-1").frontDoor!.url, {
      everyMs: 1000,
      maxTokens: 1500,
      long: true,
    });
    const watch = watchSlots();
    const card = await swaps.request("sim-org/cold-good", "gpu-1");
    const plan = await swaps.plan(card.ts);
    expect(JSON.stringify(plan)).toMatch(
      /\*Clients\* cold swap behind the front door \(HAProxy: slot `blue` drains, `hold` holds\)/,
    );
    expect(JSON.stringify(plan)).toMatch(/None fails/);
    expect(JSON.stringify(plan)).toMatch(
      /\*Page cache\* yes: [\d.]+ [MG]iB of weights fit in the [\d.]+ [GT]iB of RAM available/,
    );
    await swaps.approve(card.ts);
    await swaps.outcome(card.ts, /Swapped/);
    // a little traffic after the swap, then the stream's report
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const report = await stream.stop();
    stream = undefined;
    const longReport = await long.stop();
    measured.cold = summary(report);
    // at every look during the swap, some slot took new requests: the front door never pointed at nothing
    const seen = await watch.stop();
    expect(seen.length).toBeGreaterThanOrEqual(3);
    expect(withoutReadySlot(seen)).toEqual([]);
    expect(seen.some((states) => states.hold === "ready" && states.blue === "drain")).toBe(true);

    expect(report.failed, JSON.stringify(report.answers.filter((a) => a.status !== 200))).toBe(0);
    const order = servedOrder(report);
    const firstNew = order.indexOf("sim-org/cold-good");
    expect(firstNew).toBeGreaterThan(0);
    // every request sent before the first one the new model answered was the old model's; none after
    expect(order.slice(firstNew).every((m) => m === "sim-org/cold-good")).toBe(true);
    expect(order[0]).not.toBe("sim-org/cold-good");
    if (before !== undefined) expect(order[0]).toBe(before);
    // the held requests waited through the load (3 s) and the checks, but within the hold
    expect(report.maxGapMs).toBeGreaterThan(2000);
    expect(report.maxMs).toBeLessThan(60_000); // well within the hold (300 s)

    const record = await swaps.record(swaps.swapId(card.ts));
    expect(record?.frontDoor).toMatchObject({ cut: 0 });
    const { heldAt, drainedAt, releasedAt } = record!.frontDoor!;
    // the drain waited for the long answers in flight on the old unit, and each was answered whole
    const drainMs = Date.parse(drainedAt!) - Date.parse(heldAt);
    expect(drainMs).toBeGreaterThan(500);
    measured.drain_ms = drainMs;
    expect(longReport.failed).toBe(0);
    const drainedOld = longReport.answers.filter(
      (a) => a.sentAt < Date.parse(heldAt) && a.at > Date.parse(heldAt) && a.model !== "sim-org/cold-good",
    );
    // failed once on a loaded machine (2026-12-07): the long answers around the hold say why next time
    const around = longReport.answers
      .filter((a) => Math.abs(a.sentAt - Date.parse(heldAt)) < 8000)
      .map((a) => ({ ...a, sentAt: a.sentAt - Date.parse(heldAt), at: a.at - Date.parse(heldAt) }));
    expect(
      drainedOld.length,
      `long answers around the hold (ms from it): ${JSON.stringify(around)}`,
    ).toBeGreaterThan(0);
    expect(Date.parse(releasedAt!)).toBeGreaterThan(Date.parse(record!.healthyAt!));
    expect(Date.parse(releasedAt!)).toBeLessThan(Date.parse(record!.stages.benchmark.finishedAt!));
    const thread = swaps.threadText(card.ts);
    expect(thread).toMatch(
      /Front door: new requests are held \(up to 5 min\) while `blue` drains; its requests in flight ended after/,
    );
    expect(thread).toMatch(/Front door: the held requests go to `blue` now; new requests waited at most/);
    expect(thread).toMatch(/New requests are held meanwhile/);
    // the new weights were read into the page cache (vmtouch, for real) while the old unit still served
    expect(thread).toMatch(/📥 The new weights are in the page cache \(read in [\d.]+ s\)/);
    expect(record?.switch?.preload).toMatchObject({ ok: true });
    expect(Date.parse(record!.frontDoor!.heldAt)).toBeGreaterThanOrEqual(
      Date.parse(record!.switch!.startedAt) + record!.switch!.preload!.seconds * 1000 - 1,
    );
    // the outcome, the card and /llm history say what clients saw, with where the time went
    expect(thread).toMatch(/No request refused: new ones were held at most \d+(\.\d)? s by the front door/);
    const card2 = JSON.stringify(bench.slack.messages(CHANNEL).find((m) => m.ts === card.ts));
    expect(card2).toMatch(
      /clients: requests held [\d.]+ s \(drain [\d.]+ s · stop [\d.]+ s · load [\d.]+ s · sanity [\d.]+ s\)/,
    );
    const table = await swaps.channelAnswer(USERS.alice, "history gpu-1", (m) =>
      m.text.startsWith("Swap history"),
    );
    expect(JSON.stringify(table)).toMatch(/↳ clients: requests held [\d.]+ s \(drain/);
    // /llm status shows the front door's slots
    const status = await swaps.channelAnswer(USERS.alice, "status gpu-1 --share", (m) =>
      m.text.includes("gpu-1"),
    );
    expect(JSON.stringify(status)).toMatch(
      /🚪 \*Front door\* \(HAProxy backend `sglang`\): `blue` takes requests \(\d+ in flight\) · `hold` idle \(holds requests only during a swap\)/,
    );
    expect(await slots()).toMatchObject({ blue: "ready", hold: "maint" });
  }, 120_000);

  it("a new model that fails its sanity check is never seen by a client: rolled back behind the hold", async () => {
    await bench
      .host("gpu-1")
      .sim.setFault("sglang", { loadSeconds: 3, models: { "cold-nan": { mode: "nan" } } });
    stream = startClientStream(bench.host("gpu-1").frontDoor!.url, { everyMs: 150, maxTokens: 200 });
    const watch = watchSlots();
    const card = await swaps.request("sim-org/cold-nan", "gpu-1");
    await swaps.approve(card.ts);
    await swaps.outcome(card.ts, /Rolled back/);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const report = await stream.stop();
    stream = undefined;
    measured.failed_cold = summary(report);
    const seen = await watch.stop();
    expect(withoutReadySlot(seen)).toEqual([]);

    expect(report.failed, JSON.stringify(report.answers.filter((a) => a.status !== 200))).toBe(0);
    // the NaN model answered nobody: every request went to the model served before and after
    expect(Object.keys(report.byModel)).toEqual(["sim-org/cold-good"]);
    expect(await slots()).toMatchObject({ blue: "ready", hold: "maint" });
    const thread = swaps.threadText(card.ts);
    expect(thread).toMatch(/Front door: the held requests go to `blue` now/);
  }, 120_000);
});

describe("the same cold swap without a front door (the baseline)", () => {
  it("clients get refused connections while the new model loads", async () => {
    const port = bench.host("gpu-2").servingPort;
    stream = startClientStream(`http://127.0.0.1:${port}`, {
      everyMs: 150,
      maxTokens: 200,
      timeoutMs: 30_000,
    });
    const card = await swaps.request("sim-org/direct-good", "gpu-2");
    const plan = await swaps.plan(card.ts);
    expect(JSON.stringify(plan)).toMatch(
      /\*Clients\* cold swap, no front door: requests in flight finish first/,
    );
    await swaps.approve(card.ts);
    await swaps.outcome(card.ts, /Swapped/);
    const report = await stream.stop();
    stream = undefined;
    measured.baseline_cold = summary(report);
    expect(report.failed).toBeGreaterThan(5);
    // SGLang drains on SIGTERM: a request in flight at the stop is answered, not cut (no 200 is lost
    // mid-answer; the failures are refused connections of requests sent while nothing listened)
    const failures = report.answers.filter((a) => a.status !== 200);
    expect(failures.every((a) => a.status === 0 || a.status === 503)).toBe(true);
    console.info(`front door cold swap, measured: ${JSON.stringify(measured)}`);
  }, 120_000);
});
