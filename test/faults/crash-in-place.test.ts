import { describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import type { SwapDriver } from "../../testbench/swap-driver.ts";
import { addInPlaceModel, IN_PLACE_MODEL, inPlaceBenchOptions } from "../support/in-place-bench.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * The fault suite's crash around an in-place load (issue #31): a real `modelswap start` process SIGKILLed
 * while SGLang loads a new revision (POST /update_weights_from_disk in flight on the host), then a new
 * process started. The record says the load was asked for, not whether it ended. The dead worker's command
 * still holds the host's fence (src/host/fence.ts), so the new worker's first change (the front door's
 * hold) waits for it to end; it then asks the engine which weights it serves, finds the new ones, and goes
 * on without a second load: never a restart, never the load counted as failed.
 */
const MODEL = IN_PLACE_MODEL;
const SHA = { v1: "d4".repeat(20), v2: "e5".repeat(20) } as const;
const HOST = "gpu-ipc";
let bench: Bench;
let swaps: SwapDriver;

useSwapBench(
  inPlaceBenchOptions(HOST, { healthTimeoutSeconds: 60, lockSeconds: 5, stalledCheckSeconds: 1 }, false),
  (b, s) => {
    bench = b;
    swaps = s;
    addInPlaceModel(bench, { main: SHA.v1, v2: SHA.v2 });
  },
);

const sim = () => bench.host(HOST).sim;

async function approvedSwap(model: string): Promise<{ cardTs: string; swapId: string }> {
  const card = await swaps.request(model, HOST);
  await swaps.plan(card.ts);
  await swaps.approve(card.ts);
  return { cardTs: card.ts, swapId: swaps.swapId(card.ts) };
}

describe("a worker killed during an in-place load, then restarted", () => {
  let unit = "";
  let pid = 0;

  it("first, the main revision, cold", async () => {
    await bench.spawnBot();
    const first = await approvedSwap(MODEL);
    await swaps.outcome(first.cardTs, /Swapped/, 120_000);
    unit = (await swaps.record(first.swapId))!.plan!.unitName;
    pid = (await sim().unitState(unit)).mainPid;
  }, 180_000);

  it("waits out the dead worker's load under the fence, finds the new weights served, and loads nothing twice", async () => {
    // the load takes 8 s: the new process (its start, the dead one's lease running out) comes while it runs
    await sim().setFault("sglang", { updateSeconds: 8 });
    const swap = await approvedSwap(`${MODEL}@v2`);
    await swaps.untilRecord(swap.swapId, (r) => r.switch?.inPlace?.beganAt !== undefined, {
      what: "the in-place load asked for",
      timeoutMs: 120_000,
    });
    // killed once the engine is inside the load (the request reached it)
    const by = Date.now() + 30_000;
    while (!(await sim().journal(unit)).includes("Update engine weights online from disk begin")) {
      if (Date.now() > by) throw new Error("the engine never began the load");
      await new Promise((r) => setTimeout(r, 50));
    }
    await bench.killChildren();
    await bench.spawnBot();
    await swaps.outcome(swap.cardTs, /Swapped/, 120_000);
    await swaps.finalLine(swap.cardTs);
    const record = await swaps.record(swap.swapId);
    expect(record?.switch?.inPlace?.at).toBeDefined();
    const journal = await sim().journal(unit);
    // one load, the dead worker's; the new one found its result (so it has no time of its own for it)
    expect(journal.split("Update engine weights online from disk begin").length - 1).toBe(1);
    expect(record?.switch?.inPlace?.seconds).toBeUndefined();
    expect(swaps.threadText(swap.cardTs)).toMatch(
      new RegExp(
        `⚡ New weights loaded into the running \`${unit}\` \\(\`update_weights_from_disk\`\\): the same process \\(MainPID ${pid}\\)`,
      ),
    );
    expect((await sim().unitState(unit)).mainPid).toBe(pid);
    expect(await swaps.startsOf(HOST, unit)).toBe(1);
    expect(swaps.threadText(swap.cardTs)).toMatch(
      new RegExp(`\`${unit}\` active \\(MainPID ${pid}\\) serving \`[^\`]*${SHA.v2.slice(0, 12)}\``),
    );
    await bench.killChildren();
    await sim().setFault("sglang", {});
  }, 240_000);
});
