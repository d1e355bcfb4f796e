import { describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import { RolloutDriver } from "../../testbench/rollout-driver.ts";
import { addSimModel, type SwapDriver, unitOf } from "../../testbench/swap-driver.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * A rollout survives what a swap survives: its worker SIGKILLed mid-wave (a new process takes the rollout
 * and its hosts' swaps over from their records: each new unit starts once, one card, one plan), and a host
 * of the next wave cut off (its swap gives up; the rollout halts before that wave, whose hosts are never
 * changed, and keeps the canary).
 */
let bench: Bench;
let swaps: SwapDriver;
let rollouts: RolloutDriver;
const HOSTS = ["gpu-1", "gpu-2", "gpu-3"];

useSwapBench(
  {
    swaps: { lockSeconds: 5, stalledCheckSeconds: 1, hostRetrySeconds: 6 },
    hosts: HOSTS.map((name) => ({
      name,
      gpus: "8x-rtx-pro-6000-blackwell",
      serving: { preset: "qwen3-fp8-dense" },
      ...(name === "gpu-3" ? { reach: "relay" as const } : {}),
    })),
  },
  (b, s) => {
    bench = b;
    swaps = s;
    rollouts = new RolloutDriver(b, s);
  },
);

/** The group both tests roll out to (the bot reads it when it starts). */
async function groupProd(): Promise<void> {
  await bench.editConfig((config) => {
    // the sims' tok/s follow the bench machine's load (test files share 2 cores): the gate's arithmetic is
    // held by test/unit/rollout.test.ts, and a wide margin here keeps load from halting the rollout
    config.groups = {
      prod: { hosts: "gpu-[1-3]", canary: 1, waves: [100], maxUnavailable: 2, throughputMargin: 75 },
    };
  });
}

describe("a rollout under faults", () => {
  it("goes on after its worker is killed mid-wave: every host swapped once, one card, one plan", async () => {
    await groupProd();
    await bench.spawnBot();
    const model = addSimModel(bench, "rollout-crash");
    const { card, id } = await rollouts.request(`${model} --group prod`);
    await rollouts.approve(card);
    // the canary is switching: the process dies under it and under the rollout's wait
    const canary = (await rollouts.record(id)).hosts[0]!;
    await swaps.untilRecord(canary.swapId, (r) => r.switch !== undefined, { what: "the canary's switch" });
    await bench.killChildren();
    await bench.spawnBot();
    await rollouts.outcome(card, /Rolled out/);

    const done = await rollouts.record(id);
    expect(done.outcome).toBe("succeeded");
    for (const [host, child] of await rollouts.children(id)) {
      expect(child.outcome, host).toBe("succeeded");
      expect(await swaps.startsOf(host, unitOf(child)), host).toBe(1);
    }
    expect(rollouts.cardsOf(id)).toHaveLength(1);
    expect(rollouts.plansOf(card)).toHaveLength(1);
    expect(rollouts.threadText(card).match(/Wave 2 passed its gate/g)).toHaveLength(1);
    await bench.killChildren();
  }, 300_000);

  it("halts when a host of the next wave cannot be reached: nothing of that wave is touched", async () => {
    await groupProd();
    await bench.spawnBot();
    const model = addSimModel(bench, "rollout-cut");
    const { card, id } = await rollouts.request(`${model} --group prod`);
    await rollouts.plan(card);
    const before = await rollouts.children(id);
    const servingOn = (host: string) => before.get(host)!.plan!.host.currentUnit.name;
    // gpu-3's link goes down once its files are there, while it waits for wave 2: its swap finds it cut
    // at its next look and gives up after swaps.hostRetrySeconds. The canary's new model loads for 20 s
    // (SGLANG.md: loadSeconds, a model-scoped start-up switch), so that happens while the canary's wave
    // runs, whatever the machine's load: the case is a host lost before its wave, not one lost in it
    await bench.host("gpu-1").sim.setFault("sglang", { models: { "rollout-cut": { loadSeconds: 20 } } });
    bench.relay("gpu-3").cut();
    await rollouts.approve(card);
    await swaps.untilRecord(before.get("gpu-3")!.id, (r) => r.outcome !== undefined, {
      what: "gpu-3's swap to give up on its host",
    });
    expect(
      (await swaps.record(before.get("gpu-1")!.id))?.outcome,
      "the canary, still loading",
    ).toBeUndefined();
    await rollouts.outcome(card, /Halted/);
    bench.relay("gpu-3").mend();
    await bench.host("gpu-1").sim.setFault("sglang", {});

    const halted = await rollouts.record(id);
    expect(halted.outcome).toBe("halted");
    expect(halted.reason).toMatch(/^gpu-3's swap ended before its wave \(failed: gpu-3 could not be reached/);
    const kids = await rollouts.children(id);
    expect(kids.get("gpu-1")!.outcome).toBe("succeeded");
    expect(kids.get("gpu-2")!.outcome).toBe("cancelled");
    expect(kids.get("gpu-3")!.outcome).toBe("failed");
    expect(rollouts.threadText(card)).toContain(
      "Not touched (their swaps cancelled, files kept): gpu-2, gpu-3.",
    );
    expect(rollouts.threadText(card)).toContain("Serving the new model from earlier waves, left so: gpu-1.");
    // nothing of wave 2 changed: what served there serves still
    for (const host of ["gpu-2", "gpu-3"]) {
      expect(kids.get(host)!.switch, host).toBeUndefined();
      expect(await swaps.stopsOf(host, servingOn(host)), host).toBe(0);
      const active = await bench.host(host).sim.exec(`systemctl is-active ${servingOn(host)}`);
      expect(active.stdout.trim(), host).toBe("active");
    }
    await bench.killChildren();
  }, 300_000);
});
