import { describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import { addSimModel, type SwapDriver, unitOf } from "../../testbench/swap-driver.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/** systemd refusing the switch halfway: the old service is back (or was never gone), and said so. */
let bench: Bench;
let swaps: SwapDriver;

useSwapBench(
  {
    swaps: { healthTimeoutSeconds: 30 },
    hosts: [
      { name: "reload-fails", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } },
      { name: "enable-fails", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } },
    ],
    startBot: true,
  },
  (b, s) => {
    bench = b;
    swaps = s;
    addSimModel(b, "switch-a");
    addSimModel(b, "switch-b");
  },
);

describe("a switch that systemd refuses", () => {
  it("before the old unit was stopped (daemon-reload refused): rolled back without touching the old unit, no page", async () => {
    const host = bench.host("reload-fails");
    const card = await swaps.request("sim-org/switch-a", "reload-fails");
    const swapId = swaps.swapId(card.ts);
    await swaps.plan(card.ts);
    const oldUnit = host.unit;
    const startsBefore = await swaps.startsOf("reload-fails", oldUnit);
    // as on a host where the bot's sudo rights are missing: systemd refuses it everything privileged
    await host.sim.setFault("systemctlFails", ["daemon-reload", `enable:${oldUnit}`, "disable"]);
    await swaps.approve(card.ts);
    await swaps.outcome(card.ts, /Rolled back/);
    await host.sim.setFault("systemctlFails", null);
    const record = await swaps.record(swapId);
    expect(record?.reason).toMatch(/daemon-reload/);
    expect(record?.rollback?.ok).toBe(true);
    expect((await host.sim.unitState(oldUnit)).activeState).toBe("active");
    // never stopped, never started again: it served all along
    expect(await swaps.startsOf("reload-fails", oldUnit)).toBe(startsBefore);
    expect(swaps.threadText(card.ts)).not.toMatch(/<!channel>/);
  }, 90_000);

  it("after the old unit was stopped (enable of the new one fails): the old unit is started again", async () => {
    const host = bench.host("enable-fails");
    const card = await swaps.request("sim-org/switch-b", "enable-fails");
    const swapId = swaps.swapId(card.ts);
    await swaps.plan(card.ts);
    const newUnit = unitOf(await swaps.record(swapId));
    await host.sim.setFault("systemctlFails", [`enable:${newUnit}`]);
    await swaps.approve(card.ts);
    await swaps.outcome(card.ts, /Rolled back/);
    await host.sim.setFault("systemctlFails", null);
    const record = await swaps.record(swapId);
    expect(record?.reason).toContain(`starting ${newUnit}`);
    expect(record?.rollback?.ok).toBe(true);
    expect((await host.sim.unitState(host.unit)).activeState).toBe("active");
    expect((await host.sim.unitState(unitOf(record))).activeState).not.toBe("active");
  }, 90_000);
});
