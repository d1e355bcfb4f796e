import { join } from "node:path";
import { startBench } from "../testbench/bench.ts";
import {
  type FailoverKind,
  startFailoverTopology,
  swapThroughFailover,
} from "../testbench/redis-failover.ts";
import { addSimModel } from "../testbench/swap-driver.ts";
import { benchSpeed, type Progress, type SectionResult, type Speed, servingHost } from "./section.ts";
import { round } from "./stats.ts";

export interface FailoverOptions {
  speed: Speed;
}

/** The swap's end as the card said it (lower case), or "none" when it said nothing within the bound. */
export const FAILOVER_OUTCOMES = ["swapped", "rolled back", "failed", "none"] as const;
export type FailoverOutcome = (typeof FAILOVER_OUTCOMES)[number];

export interface FailoverRunFigures {
  outcome: FailoverOutcome;
  /** Host side effects that ran more than once: unit starts and stops, downloads, benchmark settings. */
  duplicates: number;
  /** From the SIGKILL of the master to a replica serving modelswap's slot. */
  failover_s: number;
}

export interface FailoverFigures {
  sentinel: FailoverRunFigures;
  cluster: FailoverRunFigures;
}

const HOST = "gpu-1";

/**
 * Failover: for each topology (Sentinel with a replica; a three-master Cluster), a swap whose Redis
 * master is SIGKILLed while the host is in the middle of the switch (testbench/redis-failover.ts), under
 * the real `modelswap start` with the shipped settings. Counted on the host: every side effect that ran
 * more than once.
 */
export async function benchFailover(
  options: FailoverOptions,
  progress: Progress,
): Promise<SectionResult<FailoverFigures>> {
  const figures: Partial<FailoverFigures> = {};
  const details: string[] = [];
  for (const kind of ["sentinel", "cluster"] as const satisfies readonly FailoverKind[]) {
    const bench = await startBench({
      ...benchSpeed(options.speed),
      logTo: "silent",
      swaps: { ...options.speed.swaps, healthTimeoutSeconds: 120 },
      hosts: [servingHost(HOST, options.speed)],
    });
    bench.slack.setRateLimits({ scale: 100 });
    const topology = await startFailoverTopology(kind, join(bench.dir, `redis-${kind}`));
    try {
      const run = await swapThroughFailover(bench, topology, {
        host: HOST,
        model: addSimModel(bench, `failover-bench-${kind}`),
        outcomeWithinMs: 600_000,
      });
      await run.driver.close();
      const outcome = run.outcome.toLowerCase() as FailoverOutcome;
      figures[kind] = {
        outcome: FAILOVER_OUTCOMES.includes(outcome) ? outcome : "none",
        duplicates: run.duplicates,
        failover_s: round(run.failover.ms / 1000, 1),
      };
      const e = run.sideEffects;
      progress(`${kind}: ${run.outcome}, failover ${round(run.failover.ms / 1000, 1)} s`);
      details.push(
        `failover (${kind}): master 127.0.0.1:${run.failover.from} SIGKILLed mid-switch, 127.0.0.1:${run.failover.to} serving after ${round(run.failover.ms / 1000, 1)} s; ${run.outcome}; new unit started ${e.newUnitStarts}×, old stopped ${e.oldUnitStops}×, ${e.downloads} download(s), ${e.benchmarkRuns} benchmark runs of ${e.benchmarkSettings} settings; ${run.waitsBeforeKill} writes confirmed by the replica (WAIT) before the kill`,
      );
    } finally {
      await bench.killChildren();
      await topology.stop();
      await bench.stop();
    }
  }
  return { figures: figures as FailoverFigures, details };
}
