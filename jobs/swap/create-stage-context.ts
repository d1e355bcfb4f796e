import { type Clock, systemClock } from "../../src/clock.ts";
import type { Config } from "../../src/config/load-config.ts";
import { engineFor } from "../../src/engine/engines.ts";
import { hostFrontDoor } from "../../src/front-door/host-front-door.ts";
import { detachedStatus, readTaskFile, startDetached, stopDetached } from "../../src/host/detached-task.ts";
import type { HostRegistry } from "../../src/host/host-registry.ts";
import { sh } from "../../src/host/shell-quote.ts";
import { commandFailed } from "../../src/host/transport.ts";
import type { HubClient } from "../../src/hub/hub-client.ts";
import type { Logger } from "../../src/log.ts";
import type { Recipe } from "../../src/plan/recipes.ts";
import type { ReportQueue } from "../../src/queue/report-queue.ts";
import type { Store } from "../../src/store/store.ts";
import type { HostPort, StageContext } from "../../src/swap/stage-context.ts";
import type { SwapRecord } from "../../src/swap/swap-record.ts";
import { RunningSwap } from "./swap-state.ts";

/** Everything the swap pipeline needs, built once by the composition root. */
export interface SwapDeps {
  config: Config;
  store: Store;
  hosts: HostRegistry;
  hub: Pick<HubClient, "resolve">;
  /** Asks the reporter to look at a swap soon (after each save); never waited on for Slack. */
  reports: Pick<ReportQueue, "soon">;
  log: Logger;
  /** The recipe table; the default unless a test plans with another. */
  recipes?: readonly Recipe[];
  /** Aborted when this process is stopping: a swap parks at its next safe point for another worker. */
  stopping?: AbortSignal;
  clock?: Clock;
}

/**
 * Binds a swap's record and host to the capabilities its stages get. `persist` saves the record with
 * what the stages queued (the run's checkpoint, guarded by the swap's lease).
 */
export function createStageContext(
  record: SwapRecord,
  deps: SwapDeps,
  persist: (swap: RunningSwap) => Promise<void>,
): { ctx: StageContext; swap: RunningSwap } {
  const clock = deps.clock ?? systemClock;
  const swap: RunningSwap = new RunningSwap(record, clock, () => persist(swap));
  const { swaps } = deps.config.file;
  const log = deps.log.child({ swap: record.id, host: record.host });
  const hostEngineKind = deps.config.file.hosts.find((h) => h.name === record.host)?.engine;
  const ctx: StageContext = {
    swap,
    host: hostPort(deps.hosts, record.host),
    hub: deps.hub,
    ledger: {
      serving: () => deps.store.hosts.serving(record.host),
      lastBenchmark: () => deps.store.hosts.lastBenchmark(record.host),
      planOf: async (id) => (await deps.store.swaps.get(id))?.plan,
    },
    gate: {
      decision: (planHash) => deps.store.approvals.decision(record.id, planHash),
      cancelRequest: () => deps.store.approvals.cancelRequest(record.id),
    },
    ...(deps.recipes === undefined ? {} : { recipes: deps.recipes }),
    get engine() {
      return engineFor(swap.record.plan?.engineKind ?? hostEngineKind);
    },
    get previousEngine() {
      return engineFor(swap.record.previous?.engine ?? hostEngineKind);
    },
    settings: {
      pollSeconds: swaps.pollSeconds,
      downloadRetries: swaps.downloadRetries,
      sanityTimeoutSeconds: swaps.sanityTimeoutSeconds,
      benchmarkTimeoutSeconds: swaps.benchmarkTimeoutSeconds,
      healthTimeoutSeconds: swaps.healthTimeoutSeconds,
      approvalTtlMinutes: deps.config.file.approvals.ttlMinutes,
      downloadSecrets: deps.config.env.HF_TOKEN === undefined ? {} : { HF_TOKEN: deps.config.env.HF_TOKEN },
      engine: deps.config.file.engine,
      hub: deps.config.file.hub,
      recipeOverrides: deps.config.file.recipes.overrides,
      weightScale: deps.config.file.bench.weightScale,
      baseline: swaps.baseline,
      flipBackSeconds: swaps.flipBackSeconds,
      sharedBenchmark: swaps.sharedBenchmark,
      restartAtFullMemory: swaps.restartAtFullMemory,
      sleepMode: swaps.sleepMode,
    },
    emit: (event) => swap.emit(event),
    clock,
    signal: deps.stopping ?? new AbortController().signal,
    log,
  };
  return { ctx, swap };
}

/** A configured host's capabilities over its one transport. */
export function hostPort(hosts: HostRegistry, name: string): HostPort {
  const config = hosts.config(name);
  const transport = hosts.transport(name);
  const frontDoor = hostFrontDoor(config, transport);
  return {
    name,
    config,
    ...(frontDoor === undefined ? {} : { frontDoor }),
    exec: (command, options) => transport.exec(command, options),
    async must(command, what, options) {
      const result = await transport.exec(command, options);
      if (result.code !== 0) throw commandFailed(name, what, result);
      return result;
    },
    privileged: (command) => (config.sudo ? sh`sudo -n ${command}` : command),
    startTask: (dir, script, secrets) => startDetached(transport, dir, script, secrets),
    taskStatus: (dir) => detachedStatus(transport, dir),
    stopTask: (dir) => stopDetached(transport, dir),
    readTaskFile: (path) => readTaskFile(transport, path),
  };
}
