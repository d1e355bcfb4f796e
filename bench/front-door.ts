import { secondsBetween } from "../src/swap/client-impact.ts";
import { CHANNEL, startBench, USERS } from "../testbench/bench.ts";
import { type ClientStreamReport, startClientStream } from "../testbench/client-stream.ts";
import { addSimModel, SwapDriver } from "../testbench/swap-driver.ts";
import { spawnBot, stopBot } from "./bot-process.ts";
import { benchSpeed, type Progress, type SectionResult, type Speed, servingHost } from "./section.ts";
import { round } from "./stats.ts";

export interface FrontDoorOptions {
  /** The new model's load (the simulated SGLang's loadSeconds): the window a cold swap must hide. */
  loadSeconds: number;
  /** A new client request every this many ms, through each host's door (or straight to its port). */
  everyMs: number;
  speed: Speed;
}

export interface FrontDoorFigures {
  bluegreen: { failed: number; max_gap_ms: number; p99_ms: number };
  cold: { failed: number; max_gap_ms: number; downtime_s: number; load_s: number; drain_s: number };
  rollback: { max_gap_ms: number };
  baseline: { failed: number; max_gap_ms: number };
}

/** The blue/green swaps' flip-back window: long enough to cancel inside it, short enough to wait out. */
const FLIP_BACK_SECONDS = 6;

/**
 * Swaps on three hosts, one after the other, each under a steady client stream: a blue/green swap (the
 * old model on 4 of 8 GPUs, the new one loads on the other 4 and the front door flips), then another one
 * there cancelled inside its flip-back window (the rollback: a flip back); the same cold swap on a host
 * behind a real HAProxy front door (the old unit drains, new requests are held while the new model
 * loads) and on one reached directly, as every host was before (today's stop-then-start swap, the
 * baseline).
 * Clients count failed requests and the longest time without a good answer; the swap's record gives
 * the hold (downtime_s: new requests waited from the hold to the release), the load and the drain.
 */
export async function benchFrontDoor(
  options: FrontDoorOptions,
  progress: Progress,
): Promise<SectionResult<FrontDoorFigures>> {
  const speed = { ...options.speed, engine: { ...options.speed.engine, loadSeconds: options.loadSeconds } };
  const host = (name: string, frontDoor: boolean) =>
    servingHost(name, speed, frontDoor ? { frontDoor: { holdSeconds: 300 } } : {});
  const bench = await startBench({
    ...benchSpeed(options.speed),
    logTo: "silent",
    swaps: { ...options.speed.swaps, flipBackSeconds: FLIP_BACK_SECONDS },
    hosts: [
      {
        ...host("bluegreen", false),
        serving: { preset: "qwen3-fp8-dense" as const, tp: 4 },
        frontDoor: { holdSeconds: 300, standby: true },
      },
      host("door", true),
      host("direct", false),
    ],
  });
  const driver = new SwapDriver(bench);
  try {
    const bot = await spawnBot(bench);
    const swapUnder = async (name: string, url: string): Promise<[ClientStreamReport, string]> => {
      const model = addSimModel(bench, `front-door-bench-${name}`);
      const clients = startClientStream(url, { everyMs: options.everyMs, timeoutMs: 600_000 });
      const card = await driver.request(model, name);
      await driver.approve(card.ts);
      await driver.outcome(card.ts, /Swapped/, 600_000);
      // a second of traffic on the new model, then the stream's account
      await new Promise((resolve) => setTimeout(resolve, 1000));
      return [await clients.stop(), driver.swapId(card.ts)];
    };
    const flipUrl = bench.host("bluegreen").frontDoor!.url;
    const [bluegreen, flipSwap] = await swapUnder("bluegreen", flipUrl);
    progress(
      `blue/green: ${bluegreen.failed} of ${bluegreen.answered} requests failed, largest gap ${round(bluegreen.maxGapMs, 0)} ms`,
    );
    const flipRecord = await driver.record(flipSwap);
    if (flipRecord?.flip === undefined)
      throw new Error("the blue/green swap did not flip (was it planned cold?)");
    const rollback = await cancelInWindow(
      driver,
      bench,
      addSimModel(bench, "front-door-bench-back"),
      flipUrl,
      options.everyMs,
    );
    progress(
      `blue/green cancelled in its window: flipped back, largest gap ${round(rollback.maxGapMs, 0)} ms`,
    );
    const door = bench.host("door").frontDoor!;
    const [cold, coldSwap] = await swapUnder("door", door.url);
    progress(`behind the front door: ${cold.failed} of ${cold.answered} requests failed`);
    const [direct] = await swapUnder("direct", `http://127.0.0.1:${bench.host("direct").servingPort}`);
    progress(`straight to the port: ${direct.failed} of ${direct.answered} requests failed`);
    await stopBot(bot);
    const record = await driver.record(coldSwap);
    const fd = record?.frontDoor;
    const sw = record?.switch;
    if (fd?.releasedAt === undefined || fd.drainedAt === undefined || sw?.newStartedAt === undefined)
      throw new Error("the cold swap's record has no hold, drain or start");
    const span = (from: string, to: string) => round(secondsBetween(from, to)!, 2);
    const figures: FrontDoorFigures = {
      bluegreen: {
        failed: bluegreen.failed,
        max_gap_ms: round(bluegreen.maxGapMs, 0),
        p99_ms: round(bluegreen.p99Ms, 0),
      },
      cold: {
        failed: cold.failed,
        max_gap_ms: round(cold.maxGapMs, 0),
        downtime_s: span(fd.heldAt, fd.releasedAt),
        load_s: span(sw.newStartedAt, record!.healthyAt!),
        drain_s: span(fd.heldAt, fd.drainedAt),
      },
      rollback: { max_gap_ms: round(rollback.maxGapMs, 0) },
      baseline: { failed: direct.failed, max_gap_ms: round(direct.maxGapMs, 0) },
    };
    return {
      figures,
      details: [
        `frontdoor: blue/green ${bluegreen.answered} answered, ${bluegreen.failed} failed; its flip back ${rollback.answered} answered, ${rollback.failed} failed`,
        `frontdoor: a request every ${options.everyMs} ms; behind the door ${cold.answered} answered (p99 ${round(cold.p99Ms, 0)} ms), straight to the port ${direct.answered} (${direct.failed} refused while the new model loaded)`,
      ],
    };
  } finally {
    await driver.close();
    await bench.stop();
  }
}

/**
 * A blue/green swap on `host` cancelled a second after its flip, inside the flip-back window: the front
 * door flips back to the old unit, still loaded. The client stream's account of it.
 */
async function cancelInWindow(
  driver: SwapDriver,
  bench: Awaited<ReturnType<typeof startBench>>,
  model: string,
  url: string,
  everyMs: number,
): Promise<ClientStreamReport> {
  const card = await driver.request(model, "bluegreen");
  const id = driver.swapId(card.ts);
  await driver.approve(card.ts);
  const clients = startClientStream(url, { everyMs, timeoutMs: 600_000 });
  await driver.untilRecord(id, (r) => r.flip !== undefined, { what: "the flip", timeoutMs: 600_000 });
  await new Promise((resolve) => setTimeout(resolve, 1000));
  await bench.slack.command(USERS.alice, `cancel ${id}`, { channel: CHANNEL });
  await driver.outcome(card.ts, /Cancelled/, 600_000);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const report = await clients.stop();
  if ((await driver.record(id))?.flip?.flippedBackAt === undefined)
    throw new Error("the cancelled blue/green swap did not flip back");
  return report;
}
