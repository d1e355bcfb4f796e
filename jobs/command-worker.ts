import { type Job, Worker } from "bullmq";
import {
  COMMAND_QUEUE,
  gcJobSchema,
  historyJobSchema,
  JOB_NAMES,
  statusJobSchema,
} from "../src/queue/command-queue.ts";
import { WORKER_METRICS } from "../src/queue/worker-metrics.ts";
import type { WorkerWatch } from "../src/queue/worker-watch.ts";
import type { RedisClient } from "../src/redis/redis-client.ts";
import { QUEUE_PREFIX } from "../src/store/keys.ts";
import { type GcJobDeps, runGcJob } from "./gc-job.ts";
import { runHistoryJob } from "./history-job.ts";
import { runStatusJob, type StatusJobDeps } from "./status-job.ts";

export type CommandWorkerDeps = StatusJobDeps & Omit<GcJobDeps, keyof StatusJobDeps>;

/** The worker for short command jobs (status now; history, cancel later). */
export function createCommandWorker(
  connection: RedisClient,
  deps: CommandWorkerDeps,
  watch: WorkerWatch,
  concurrency = 8,
): Worker {
  const worker = new Worker(
    COMMAND_QUEUE,
    watch.inFlight.track(COMMAND_QUEUE, async (job: Job) => {
      switch (job.name) {
        case JOB_NAMES.status:
          return await runStatusJob(statusJobSchema.parse(job.data), deps);
        case JOB_NAMES.history:
          return await runHistoryJob(historyJobSchema.parse(job.data), deps);
        case JOB_NAMES.gc:
          return await runGcJob(gcJobSchema.parse(job.data), deps);
        default:
          throw new Error(`unknown job ${job.name}`);
      }
    }),
    { connection, prefix: QUEUE_PREFIX, concurrency, metrics: WORKER_METRICS },
  );
  worker.on("failed", (job, error) => {
    deps.log.error({ job: job?.name, jobId: job?.id, err: error.message }, "command job failed");
  });
  worker.on("error", (error) => watch.reachability.error("command worker", error));
  return worker;
}
