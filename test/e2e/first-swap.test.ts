import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import { addSimModel, logLines, type SwapDriver, unitOf, waitForLog } from "../../testbench/swap-driver.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/** A host that serves nothing yet (a new box): the first swap has nothing to stop and nothing to go back to. */
let bench: Bench;
let swaps: SwapDriver;

useSwapBench(
  {
    swaps: { healthTimeoutSeconds: 30 },
    hosts: [{ name: "new-box", gpus: "8x-rtx-pro-6000-blackwell", serving: false }],
    startBot: true,
  },
  (b, s) => {
    bench = b;
    swaps = s;
    addSimModel(b, "first-good");
    addSimModel(b, "first-nan");
  },
);

describe("the first swap on a host that serves nothing", () => {
  it("a failing model is stopped again: the host is back to serving nothing, no page", async () => {
    await bench.host("new-box").sim.setFault("sglang", { models: { "first-nan": { mode: "nan" } } });
    const card = await swaps.request("sim-org/first-nan", "new-box");
    const swapId = swaps.swapId(card.ts);
    await swaps.approve(card.ts);
    await swaps.outcome(card.ts, /Rolled back/);
    const record = await swaps.record(swapId);
    expect(record?.rollback).toEqual({ ok: true, detail: expect.stringContaining("nothing served before") });
    expect((await bench.host("new-box").sim.unitState(unitOf(record))).activeState).not.toBe("active");
    expect(swaps.threadText(card.ts)).not.toMatch(/<!channel>/);
  }, 90_000);

  it("a good model is started; nothing else is stopped", async () => {
    const card = await swaps.request("sim-org/first-good", "new-box");
    const swapId = swaps.swapId(card.ts);
    await swaps.approve(card.ts);
    await swaps.outcome(card.ts, /Swapped/);
    const record = await swaps.record(swapId);
    expect(await swaps.startsOf("new-box", unitOf(record))).toBe(1);
    const disables = (await bench.host("new-box").sim.calls()).filter(
      (c) => c.cmd === "systemctl" && c.argv[0] === "disable",
    );
    // only the failed first swap's own unit was ever disabled (by its rollback)
    expect(disables.map((c) => c.argv.at(-1))).toEqual([
      expect.stringMatching(/^sglang-sim-org-first-nan-[0-9a-f]{7}\.service$/),
    ]);

    // every log line about this swap says which swap and which host, so one grep finds its whole story
    // the logger writes asynchronously: wait for the story's last line ("swap finished") to land
    const log = join(bench.dir, "bot.log");
    await waitForLog(log, (l) => l.includes(swapId) && l.includes('"swap finished"'), { timeoutMs: 10_000 });
    const lines = (await logLines(log))
      .filter((l) => l.includes(swapId))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.length).toBeGreaterThan(5);
    for (const line of lines) {
      expect(line.swap ?? line.swapId, JSON.stringify(line)).toBe(swapId);
      expect(line.host, JSON.stringify(line)).toBe("new-box");
    }
  }, 90_000);
});
