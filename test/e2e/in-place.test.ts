import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type Bench, CHANNEL, USERS } from "../../testbench/bench.ts";
import { startClientStream } from "../../testbench/client-stream.ts";
import type { SwapDriver } from "../../testbench/swap-driver.ts";
import { addInPlaceModel, IN_PLACE_MODEL, inPlaceBenchOptions } from "../support/in-place-bench.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * Issue #31's same-architecture fast path, end to end on the bench behind a real HAProxy: a new revision of
 * the model serving now (the same files at another commit of the same repo) is planned in place, and
 * loaded into the running SGLang with POST /update_weights_from_disk while the front door holds new
 * requests: the same process serves on (its MainPID unchanged), the unit file gets the new model path only
 * after health and sanity passed, and no client request fails. A revision that answers NaN once loaded is
 * undone by loading the old weights back into the same process.
 */
const MODEL = IN_PLACE_MODEL;
const SHA = { v1: "a1".repeat(20), v2: "b2".repeat(20), v3: "c3".repeat(20) } as const;
const HOST = "gpu-ip";
let bench: Bench;
let swaps: SwapDriver;

useSwapBench(inPlaceBenchOptions(HOST, { healthTimeoutSeconds: 20 }, true), (b, s) => {
  bench = b;
  swaps = s;
  addInPlaceModel(bench, { main: SHA.v1, v2: SHA.v2, v3: SHA.v3 });
});

async function swapTo(model: string, outcome: RegExp) {
  const swap = await swaps.request(model, HOST);
  const plan = await swaps.plan(swap.ts);
  await swaps.approve(swap.ts);
  const card = await swaps.outcome(swap.ts, outcome);
  await swaps.finalLine(swap.ts);
  const record = await swaps.record(swaps.swapId(swap.ts));
  return { swap, plan: JSON.stringify(plan.blocks), card, record, thread: swaps.threadText(swap.ts) };
}

const unitFile = (unit: string) => readFile(join(bench.host(HOST).sim.unitDir, unit), "utf8");

describe("a new revision loaded in place", () => {
  let unit = "";
  let pid = 0;

  it("first, the model's main revision, swapped in cold (the seed's unit is another model)", async () => {
    const first = await swapTo(MODEL, /Swapped/);
    expect(first.plan).not.toContain("*In place*");
    unit = first.record!.plan!.unitName;
    pid = (await bench.host(HOST).sim.unitState(unit)).mainPid;
    expect(pid).toBeGreaterThan(0);
  }, 180_000);

  it("loads v2 into the running engine: the same process, the unit file rewritten after the checks, no request failed", async () => {
    const host = bench.host(HOST);
    const clients = startClientStream(host.frontDoor!.url, { everyMs: 100 });
    const v2 = await swapTo(`${MODEL}@v2`, /Swapped/);
    const seen = await clients.stop();
    expect(v2.plan).toMatch(/\*In place\* yes: a new revision of the model serving now/);
    expect(v2.plan).toMatch(/\*Stops\* nothing: `[^`]+` \(running\) goes on running/);
    const record = v2.record!;
    expect(record.plan!.unitName).toBe(unit);
    expect(record.switch?.inPlace).toMatchObject({ seconds: expect.any(Number) });
    expect(record.switch?.inPlace?.unitWrittenAt).toBeDefined();
    expect(v2.thread).toMatch(
      new RegExp(
        `⚡ New weights loaded into the running \`${unit}\` in [\\d.]+ m?s \\(\`update_weights_from_disk\`\\): the same process \\(MainPID ${pid}\\)`,
      ),
    );
    // what the final check saw: the same process, serving the new directory, through the front door
    expect(v2.thread).toMatch(
      new RegExp(
        `Checked at [\\d:]+ UTC: \`${unit}\` active \\(MainPID ${pid}\\) serving \`[^\`]*${SHA.v2.slice(0, 12)}\``,
      ),
    );
    // the card says where the wait went: the drain, the load in place, the sanity prompts
    expect(JSON.stringify(v2.card.blocks)).toMatch(
      /clients: requests held [\d.]+ m?s \(drain [\d.]+ m?s · load in place [\d.]+ m?s · sanity [\d.]+ m?s\)/,
    );
    expect((await host.sim.unitState(unit)).mainPid).toBe(pid);
    expect(await swaps.startsOf(HOST, unit)).toBe(1);
    const text = await unitFile(unit);
    expect(text).toContain(SHA.v2.slice(0, 12));
    expect(text).not.toContain(`--model-path ${record.plan!.clients!.inPlace!.fromModelDir}`);
    expect(seen.failed).toBe(0);
    expect(seen.answered).toBeGreaterThan(10);
  }, 180_000);

  it("undoes a revision that answers NaN by loading the old weights back into the same process", async () => {
    const host = bench.host(HOST);
    await host.sim.setFault("sglang", { models: { [SHA.v3.slice(0, 12)]: { mode: "nan" } } });
    const clients = startClientStream(host.frontDoor!.url, { everyMs: 100 });
    const v3 = await swapTo(`${MODEL}@v3`, /Rolled back/);
    const seen = await clients.stop();
    await host.sim.setFault("sglang", {});
    expect(v3.plan).toMatch(/\*In place\* yes/);
    expect(v3.thread).toMatch(/❌ Sanity check failed: .*NaN/);
    expect(v3.thread).toMatch(
      new RegExp(`↩️ The old weights loaded back into \`${unit}\` in [\\d.]+ m?s: the same process`),
    );
    expect(v3.thread).toMatch(
      new RegExp(`\`${unit}\` active \\(MainPID ${pid}\\) serving \`[^\`]*${SHA.v2.slice(0, 12)}\``),
    );
    // the unit file was never given v3: it failed before
    expect(await unitFile(unit)).toContain(SHA.v2.slice(0, 12));
    expect((await host.sim.unitState(unit)).mainPid).toBe(pid);
    expect(seen.failed).toBe(0);
  }, 180_000);

  it("/llm rollback loads the revision before back into the same process (a swap to its commit, approved)", async () => {
    const host = bench.host(HOST);
    const before = new Set(bench.slack.messages(CHANNEL).map((m) => m.ts));
    const ack = await bench.slack.command(USERS.alice, `rollback ${HOST}`, { channel: CHANNEL });
    expect(ack.ackResponse?.text).toContain(`back to \`${MODEL}@${SHA.v1.slice(0, 7)}\``);
    const card = await bench.slack.waitFor(
      () => bench.slack.messages(CHANNEL).find((m) => !before.has(m.ts) && m.text.includes(`→ ${HOST}`)),
      { what: "the rollback's card" },
    );
    const plan = JSON.stringify((await swaps.plan(card.ts)).blocks);
    expect(plan).toMatch(/\*In place\* yes/);
    await swaps.approve(card.ts);
    await swaps.outcome(card.ts, /Swapped/);
    await swaps.finalLine(card.ts);
    expect(swaps.threadText(card.ts)).toMatch(
      new RegExp(`\`${unit}\` active \\(MainPID ${pid}\\) serving \`[^\`]*${SHA.v1.slice(0, 12)}\``),
    );
    expect(await unitFile(unit)).toContain(SHA.v1.slice(0, 12));
    expect((await host.sim.unitState(unit)).mainPid).toBe(pid);
  }, 180_000);
});
