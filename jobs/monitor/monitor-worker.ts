import { type Job, Worker } from "bullmq";
import { describeError } from "../../src/errors.ts";
import {
  type HealthCheckJob,
  healthCheckJobSchema,
  MONITOR_QUEUE,
  MonitorQueue,
  scheduledAt,
} from "../../src/queue/monitor-queue.ts";
import { WORKER_METRICS } from "../../src/queue/worker-metrics.ts";
import type { WorkerWatch } from "../../src/queue/worker-watch.ts";
import type { RedisClient } from "../../src/redis/redis-client.ts";
import { IncidentTracker } from "../../src/store/incidents.ts";
import { QUEUE_PREFIX } from "../../src/store/keys.ts";
import {
  DEFAULT_RECOVERY_THRESHOLD,
  type MonitorCheckDeps,
  type MonitorCheckOutcome,
  runMonitorCheck,
} from "./monitor-check.ts";

export type MonitorDeps = Omit<MonitorCheckDeps, "tracker">;

export interface RunningMonitor {
  worker: Worker<HealthCheckJob, MonitorCheckOutcome>;
  queue: MonitorQueue;
  tracker: IncidentTracker;
  /** Settles once the schedulers match the config (start-up waits for it only briefly). */
  reconciled: Promise<void>;
  /**
   * Brings the schedulers, thresholds and concurrency to the config and hosts as they are now (after a
   * reload); throws when Redis does not take the schedulers.
   */
  reconfigure(): Promise<void>;
  close(): Promise<void>;
}

/** How long start-up waits for the schedulers to be reconciled before going on (Redis may be down). */
const RECONCILE_WAIT_MS = 5000;

/**
 * Starts the health monitor of a worker process: the `monitor` queue's worker, which runs each host's
 * scheduled check, and the reconciliation of the schedulers with the config (one per configured host,
 * none for hosts that left it), again at each reload that changes the hosts or `health:` (reconfigure).
 * Every worker process does this; upserts are idempotent, so several workers agree as long as they run
 * the same config.
 */
export async function startMonitor(
  connection: RedisClient,
  deps: MonitorDeps,
  watch: WorkerWatch,
): Promise<RunningMonitor> {
  const tracker = new IncidentTracker(connection, thresholds(deps.config.current().file.health));
  const checkDeps: MonitorCheckDeps = { ...deps, tracker };
  const queue = new MonitorQueue(connection);
  const worker = new Worker<HealthCheckJob, MonitorCheckOutcome>(
    MONITOR_QUEUE,
    watch.inFlight.track(MONITOR_QUEUE, async (job: Job<HealthCheckJob>) => {
      const { host } = healthCheckJobSchema.parse(job.data);
      return await runMonitorCheck(host, job.id ?? `${host}:${Date.now()}`, checkDeps, scheduledAt(job));
    }),
    {
      connection,
      prefix: QUEUE_PREFIX,
      concurrency: concurrencyFor(deps.hosts.names()),
      metrics: WORKER_METRICS,
    },
  );
  worker.on("failed", (job, error) => {
    deps.log.error({ host: job?.data.host, err: error.message }, "health check job failed");
  });
  worker.on("error", (error) => watch.reachability.error("monitor worker", error));

  // the schedulers, thresholds and concurrency for the config and hosts as they are now
  const reconcile = async () => {
    const { health } = deps.config.current().file;
    const hostNames = deps.hosts.names();
    tracker.setThresholds(thresholds(health));
    worker.concurrency = concurrencyFor(hostNames);
    const { removed } = await queue.reconcile(hostNames, intervalMsOf(health));
    for (const host of removed) await tracker.forget(host);
    deps.log.info(
      { hosts: hostNames, removed, intervalSeconds: health.intervalSeconds },
      "health monitor schedulers reconciled",
    );
  };
  const reconciled = reconcile().catch((error: unknown) => {
    deps.log.error({ err: describeError(error) }, "could not reconcile the health monitor's schedulers");
  });
  let timer: NodeJS.Timeout | undefined;
  const waited = await Promise.race([
    reconciled.then(() => true),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), RECONCILE_WAIT_MS);
    }),
  ]);
  clearTimeout(timer);
  if (!waited)
    deps.log.warn("Redis is slow or down: the health monitor's schedulers are reconciled once it is up");

  return {
    worker,
    queue,
    tracker,
    reconciled,
    reconfigure: reconcile,
    async close() {
      await worker.close();
      await queue.close();
    },
  };
}

type Health = ReturnType<MonitorDeps["config"]["current"]>["file"]["health"];

function intervalMsOf(health: Health): number {
  return Math.max(1, Math.round(health.intervalSeconds * 1000));
}

function thresholds(health: Health) {
  return {
    failureThreshold: health.failureThreshold,
    recoveryThreshold: health.recoveryThreshold ?? DEFAULT_RECOVERY_THRESHOLD,
    claimTimeoutMs: Math.max(60_000, 3 * intervalMsOf(health)),
  };
}

/** Every host may be checked at once (a host is never checked twice at once: the tracker's slot). */
function concurrencyFor(hosts: readonly string[]): number {
  return Math.max(4, hosts.length * 2);
}
