import { type Clock, systemClock } from "../../src/clock.ts";
import type { HostConfig } from "../../src/config/file-schema.ts";
import { hostEngineKind } from "../../src/config/host-engines.ts";
import type { ConfigSource } from "../../src/config/live-config.ts";
import { engineFor } from "../../src/engine/engines.ts";
import { hostFrontDoor } from "../../src/front-door/host-front-door.ts";
import { detachedStatus, readTaskFile, startDetached, stopDetached } from "../../src/host/detached-task.ts";
import { type FenceToken, fenceDir, fencedTransport } from "../../src/host/fence.ts";
import type { HostRegistry } from "../../src/host/host-registry.ts";
import { commandFailed } from "../../src/host/transport.ts";
import type { HubClient } from "../../src/hub/hub-client.ts";
import type { Logger } from "../../src/log.ts";
import type { CatalogueRecipe } from "../../src/plan/catalogue-schema.ts";
import type { ReportQueue } from "../../src/queue/report-queue.ts";
import type { SwapQueue } from "../../src/queue/swap-queue.ts";
import type { Store } from "../../src/store/store.ts";
import { type ChangeCommands, changeCommand } from "../../src/swap/change-command.ts";
import type { ChangeOptions, HostPort, StageContext } from "../../src/swap/stage-context.ts";
import type { SwapRecord } from "../../src/swap/swap-record.ts";
import { peerPort } from "./peer-port.ts";
import { RunningSwap } from "./swap-state.ts";

/** Everything the swap pipeline needs, built once by the composition root. */
export interface SwapDeps {
  /** Read once per run of a swap (createStageContext): a reload applies from its next run on. */
  config: ConfigSource;
  store: Store;
  hosts: HostRegistry<HostConfig>;
  hub: Pick<HubClient, "resolve">;
  /** Asks the reporter to look at a swap soon (after each save); never waited on for Slack. */
  reports: Pick<ReportQueue, "soon">;
  log: Logger;
  /**
   * The swaps' queue, for a rollout's job: it wakes a host's parked swap (its wave started, or it was
   * cancelled) and queues the swap that undoes a halted wave's finished host.
   */
  swapJobs: Pick<SwapQueue, "wake" | "enqueue">;
  /** The recipe table; the default unless a test plans with another. */
  recipes?: readonly CatalogueRecipe[];
  /** Aborted when this process is stopping: a swap parks at its next safe point for another worker. */
  stopping?: AbortSignal;
  clock?: Clock;
}

/**
 * Binds a swap's record and host to the capabilities its stages get. `persist` saves the record with
 * what the stages queued (the run's checkpoint, guarded by the swap's lease); `fence` is the run's fence
 * token, under which every change to the host runs.
 */
export function createStageContext(
  record: SwapRecord,
  deps: SwapDeps,
  persist: (swap: RunningSwap) => Promise<void>,
  fence: FenceToken,
): { ctx: StageContext; swap: RunningSwap } {
  const clock = deps.clock ?? systemClock;
  const swap: RunningSwap = new RunningSwap(record, clock, () => persist(swap));
  const config = deps.config.current();
  const { swaps } = config.file;
  const log = deps.log.child({ swap: record.id, host: record.host });
  // the registry's: a host a swap holds keeps its settings through a reload until the swap ends
  const hostEngine = hostEngineKind(deps.hosts.config(record.host));
  const peers = peerPort(record, deps);
  const ctx: StageContext = {
    swap,
    host: hostPort(deps.hosts, record.host, fence),
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
    ...(peers === undefined ? {} : { peers }),
    ...(deps.recipes === undefined ? {} : { recipes: deps.recipes }),
    get engine() {
      return engineFor(swap.record.plan?.engineKind ?? hostEngine);
    },
    get previousEngine() {
      return engineFor(swap.record.previous?.engine ?? hostEngine);
    },
    settings: {
      pollSeconds: swaps.pollSeconds,
      downloadRetries: swaps.downloadRetries,
      sanityTimeoutSeconds: swaps.sanityTimeoutSeconds,
      benchmarkTimeoutSeconds: swaps.benchmarkTimeoutSeconds,
      healthTimeoutSeconds: swaps.healthTimeoutSeconds,
      approvalTtlMinutes: config.file.approvals.ttlMinutes,
      downloadSecrets: config.env.HF_TOKEN === undefined ? {} : { HF_TOKEN: config.env.HF_TOKEN },
      engine: config.file.engine,
      hub: config.file.hub,
      recipeOverrides: config.file.recipes.overrides,
      ownRecipes: config.file.recipes.own,
      ownCompatibility: config.file.recipes.compatibility,
      profiles: config.file.models,
      weightScale: config.file.bench.weightScale,
      baseline: swaps.baseline,
      flipBackSeconds: swaps.flipBackSeconds,
      sharedBenchmark: swaps.sharedBenchmark,
      restartAtFullMemory: swaps.restartAtFullMemory,
      sleepMode: swaps.sleepMode,
      inPlace: swaps.inPlace,
      retention: config.file.retention,
    },
    emit: (event) => swap.emit(event),
    clock,
    signal: deps.stopping ?? new AbortController().signal,
    log,
  };
  return { ctx, swap };
}

/**
 * A configured host's capabilities over its one transport, for a run of a swap that holds `fence`: its
 * changes, its front door's and its tasks' commands all run under the fence (src/host/fence.ts).
 */
export function hostPort(hosts: HostRegistry<HostConfig>, name: string, token: FenceToken): HostPort {
  const config = hosts.config(name);
  const transport = hosts.transport(name);
  const fence = { dir: fenceDir(config.modelsDir), token };
  const defaultTimeoutMs = config.commandTimeoutSeconds * 1000;
  const changing = fencedTransport(transport, fence, defaultTimeoutMs);
  const frontDoor = hostFrontDoor(config, changing);
  const tryChange = (command: ChangeCommands, options: ChangeOptions = {}) => {
    const { privileged, ...exec } = options;
    return changing.exec(changeCommand(command, privileged === true, config.sudo), exec);
  };
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
    tryChange,
    async change(command, what, options) {
      const result = await tryChange(command, options);
      if (result.code !== 0) throw commandFailed(name, what, result);
      return result;
    },
    startTask: (dir, script, secrets) => startDetached(changing, dir, script, secrets),
    taskStatus: (dir) => detachedStatus(transport, dir),
    stopTask: (dir) => stopDetached(changing, dir),
    readTaskFile: (path) => readTaskFile(transport, path),
  };
}
