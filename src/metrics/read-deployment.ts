import type { Queue } from "bullmq";
import type { Logger } from "../log.ts";
import type { RedisClient } from "../redis/redis-client.ts";
import { type CheckLateness, type HostHealthState, readLateness } from "../store/incidents.ts";
import { Store } from "../store/store.ts";
import { readSwapTally, type SwapTally } from "../store/swap-tally.ts";

/** Ends the HELP of every metric read from Redis. */
export const FROM_REDIS =
  "Read from Redis at scrape time: the whole deployment's value, the same on every modelswap process (aggregate with max, not sum).";

/** What the deployment shares in Redis, read once per scrape; the metrics' collect() callbacks read it. */
export interface DeploymentState {
  /** The configured hosts (a zero is exported for each, so a host with no swap yet still shows). */
  hosts: readonly string[];
  tally: SwapTally;
  /** The health monitor's state of each host. */
  health: readonly (readonly [host: string, state: HostHealthState])[];
  /** How late the monitor's checks started against their schedule, fleet-wide. */
  lateness: CheckLateness;
  /** The step of the swap running on each host, undefined when none runs. */
  active: readonly (readonly [host: string, step: string | undefined])[];
  /** BullMQ's exporter text of each queue (Queue.exportPrometheusMetrics). */
  bullmq: readonly string[];
}

/**
 * Swaps (the tally), host health and alerts (the health monitor's state), the swap running on each
 * host (its lock and record), and BullMQ's job counts per queue, read concurrently.
 */
export async function readDeployment(
  redis: RedisClient,
  queues: readonly Queue[],
  hosts: readonly string[],
  log?: Logger,
): Promise<DeploymentState> {
  const store = new Store(redis, log === undefined ? {} : { log });
  const [tally, health, lateness, active, bullmq] = await Promise.all([
    readSwapTally(redis, log),
    Promise.all(hosts.map(async (host) => [host, await store.incidents.state(host)] as const)),
    readLateness(redis),
    Promise.all(hosts.map(async (host) => [host, await activeStep(store, host)] as const)),
    Promise.all(queues.map((q) => q.exportPrometheusMetrics())),
  ]);
  return { hosts, tally, health, lateness, active, bullmq };
}

/** The step of the swap that holds the host, if one does and it has not ended. */
async function activeStep(store: Store, host: string): Promise<string | undefined> {
  const holder = await store.locks.hostHolder(host);
  if (holder === undefined) return undefined;
  const record = await store.swaps.get(holder).catch(() => undefined);
  return record === undefined || record.outcome !== undefined ? undefined : record.step;
}
