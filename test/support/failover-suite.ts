import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import {
  type FailoverKind,
  type FailoverTopology,
  startFailoverTopology,
  swapThroughFailover,
} from "../../testbench/redis-failover.ts";
import { addSimModel, type SwapDriver } from "../../testbench/swap-driver.ts";
import { useSwapBench } from "./swap-bench.ts";

const HOST = "gpu-1";

/**
 * The failover suite for one topology (Sentinel, or a three-master Cluster): the master holding
 * modelswap's keys is SIGKILLed while the host is in the middle of the switch. The swap finishes as
 * Swapped; the host saw every side effect once; Slack saw one card and one plan; the record, its
 * decision, its ledger entry and its audit trail are on the promoted replica; the host lock is given back.
 */
export function failoverSuite(kind: FailoverKind): void {
  let bench: Bench;
  let topology: FailoverTopology | undefined;
  let swaps: SwapDriver | undefined;

  useSwapBench(
    {
      // the shipped lock and stalled-check times: a failover of a few seconds is not a stalled job
      swaps: { healthTimeoutSeconds: 60 },
      hosts: [{ name: HOST, gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } }],
    },
    (b) => {
      bench = b;
    },
  );

  describe(`Redis failing over under a swap (${kind})`, () => {
    it("the swap finishes, nothing it did is lost, nothing on the host runs twice", async () => {
      topology = await startFailoverTopology(kind, join(bench.dir, `redis-${kind}`));
      try {
        const run = await swapThroughFailover(bench, topology, {
          host: HOST,
          model: addSimModel(bench, `failover-${kind}`),
        });
        swaps = run.driver;
        expect(run.outcome).toBe("Swapped");
        expect(run.failover.to).not.toBe(run.failover.from);
        // the lock, the lease and every saved step were confirmed by the replica before the kill
        expect(run.waitsBeforeKill).toBeGreaterThan(3);
        expect(run.sideEffects).toEqual({
          newUnitStarts: 1,
          oldUnitStops: 1,
          downloads: 1,
          benchmarkSettings: 2, // single-stream and loaded
          benchmarkRuns: 2,
        });
        expect(run.duplicates).toBe(0);
        // every connection came back (none ended for good), and the promoted master, which has no replica
        // yet, was not waited on as if it had one
        expect(run.problems.filter((l) => /REDIS_CONNECTION_ENDED|REDIS_REPLICA_LAGGING/.test(l))).toEqual(
          [],
        );
        expect(run.cards).toBe(1);
        expect(run.plans).toBe(1);

        const record = await run.driver.record(run.swapId);
        expect(record).toMatchObject({ outcome: "succeeded", step: "done", host: HOST });
        expect(record?.decision).toMatchObject({ approved: true });
        const { Store } = await import("../../src/store/store.ts");
        const store = new Store(topology.client);
        expect(await store.locks.hostHolder(HOST)).toBeUndefined();
        const history = await store.swaps.history({ host: HOST, limit: 10 });
        expect(history.records.map((r) => r.id)).toContain(run.swapId);
        const trail = (await store.audit.read({ swap: run.swapId, limit: 200 })).map((e) => e.detail);
        expect(trail.some((d) => /^switch done/.test(d))).toBe(true);
        expect(trail.some((d) => /approved/i.test(d))).toBe(true);
      } finally {
        await swaps?.close();
        await bench.killChildren();
        await topology.stop();
      }
    }, 400_000);
  });
}
