import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Store } from "../../src/store/store.ts";
import type { Bench } from "../../testbench/bench.ts";
import { startFailoverTopology } from "../../testbench/redis-failover.ts";
import { RolloutDriver } from "../../testbench/rollout-driver.ts";
import { addSimModel, SwapDriver, unitOf } from "../../testbench/swap-driver.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * Redis behind Sentinel fails over in the middle of a rollout: its master is SIGKILLed while the canary is
 * inside its switch, with the second host waiting for its wave and its copy state, lease and records in
 * Redis. The rollout goes on from what the promoted replica holds: the canary finishes, the next wave
 * starts, every new unit starts once, the weights still crossed the Hub once, one card, one plan, each
 * wave line once, and both hosts are given back.
 */
const HOSTS = ["gpu-1", "gpu-2"];
let bench: Bench;

useSwapBench(
  {
    swaps: { healthTimeoutSeconds: 60 },
    hosts: HOSTS.map((name) => ({
      name,
      gpus: "8x-rtx-pro-6000-blackwell",
      serving: { preset: "qwen3-fp8-dense" },
    })),
  },
  (b) => {
    bench = b;
  },
);

describe("Redis failing over under a rollout (sentinel)", () => {
  it("the rollout finishes from the promoted replica: nothing on a host runs twice, nothing said twice", async () => {
    const topology = await startFailoverTopology("sentinel", join(bench.dir, "redis-rollout"));
    const swaps = new SwapDriver(bench, { redis: topology.client });
    try {
      delete bench.env.REDIS_URL;
      Object.assign(bench.env, topology.env);
      await bench.editConfig((config) => {
        // the sims' tok/s follow the machine's load: the gate's arithmetic is test/unit/rollout.test.ts's
        config.groups = { pair: { hosts: "gpu-[1-2]", throughputMargin: 100 } };
      });
      await bench.killChildren();
      await bench.spawnBot();
      const rollouts = new RolloutDriver(bench, swaps);
      const model = addSimModel(bench, "failover-rollout");
      const { card, id } = await rollouts.request(`${model} --group pair`);
      await rollouts.plan(card);
      const canary = bench.host("gpu-1").sim;
      await canary.hold("systemctl", " enable --now");
      await rollouts.approve(card);
      await canary.waitHeld("systemctl", 120_000);
      expect(await topology.waitsOnMaster()).toBeGreaterThan(3);
      const failover = await topology.failOver();
      expect(failover.to).not.toBe(failover.from);
      await canary.release("systemctl");

      await rollouts.outcome(card, /Rolled out/, 240_000);
      const done = await rollouts.record(id);
      expect(done.outcome, done.reason).toBe("succeeded");
      const children = await rollouts.children(id);
      for (const [host, child] of children) {
        expect(child.outcome, host).toBe("succeeded");
        expect(await swaps.startsOf(host, unitOf(child)), host).toBe(1);
      }
      expect(children.get("gpu-2")!.peerCopy).toMatchObject({ state: "copied", from: "gpu-1" });
      const modelBytes = children.get("gpu-1")!.model!.totalBytes;
      expect(bench.hub.bytesServed(model)).toBeLessThanOrEqual(modelBytes * 1.05);
      expect(rollouts.cardsOf(id)).toHaveLength(1);
      expect(rollouts.plansOf(card)).toHaveLength(1);
      expect(rollouts.threadText(card).match(/Wave 2 passed its gate/g)).toHaveLength(1);
      const store = new Store(topology.client);
      for (const host of HOSTS) expect(await store.locks.hostHolder(host), host).toBeUndefined();
    } finally {
      await swaps.close();
      await bench.killChildren();
      await topology.stop();
    }
  }, 400_000);
});
