import { Queue } from "bullmq";
import { z } from "zod";
import type { RedisClient } from "../redis/redis-client.ts";
import { QUEUE_PREFIX } from "../store/keys.ts";

export const MONITOR_QUEUE = "monitor";
export const HEALTH_CHECK_JOB = "health-check";

/** Scheduler ids are `health:<host>`: one job scheduler per configured host. */
const SCHEDULER_PREFIX = "health:";

export const healthCheckJobSchema = z.object({ host: z.string() });
export type HealthCheckJob = z.infer<typeof healthCheckJobSchema>;

export function schedulerIdOf(host: string): string {
  return `${SCHEDULER_PREFIX}${host}`;
}

export interface MonitorScheduler {
  id: string;
  host: string;
  everyMs: number | undefined;
}

/**
 * The health monitor's queue: one BullMQ job scheduler per configured host, each producing a
 * `health-check` job every interval. `reconcile` makes Redis match the config: it upserts a scheduler for
 * every host (a changed interval takes effect) and removes the schedulers of hosts no longer configured,
 * so a restart after editing the config leaves no orphan behind.
 */
export class MonitorQueue {
  readonly queue: Queue<HealthCheckJob>;

  constructor(connection: RedisClient) {
    this.queue = new Queue<HealthCheckJob>(MONITOR_QUEUE, { connection, prefix: QUEUE_PREFIX });
    this.queue.on("error", () => undefined);
  }

  async reconcile(hosts: readonly string[], everyMs: number): Promise<{ removed: string[] }> {
    const wanted = new Set(hosts);
    const removed: string[] = [];
    for (const scheduler of await this.schedulers()) {
      if (wanted.has(scheduler.host)) continue;
      await this.queue.removeJobScheduler(scheduler.id);
      removed.push(scheduler.host);
    }
    for (const [index, host] of hosts.entries()) {
      await this.queue.upsertJobScheduler(
        schedulerIdOf(host),
        // Each host gets its own moment in the interval. Without an offset BullMQ phases every scheduler
        // by the moment it was created — all within a few ms here — so the whole fleet was checked at the
        // same instant: a burst of SSH commands and Redis calls each interval (200 hosts: 200 at once).
        { every: everyMs, offset: spreadOffset(index, hosts.length, everyMs) },
        {
          name: HEALTH_CHECK_JOB,
          data: { host },
          // a check's result lives in the incident tracker, not in the job: keep Redis small
          opts: { removeOnComplete: true, removeOnFail: { count: 100 }, attempts: 1 },
        },
      );
    }
    return { removed };
  }

  /** The health-check schedulers in Redis now. */
  async schedulers(): Promise<MonitorScheduler[]> {
    const all = await this.queue.getJobSchedulers(0, -1, true);
    return all
      .map((s) => ({ id: s.key, host: s.key.slice(SCHEDULER_PREFIX.length), everyMs: s.every }))
      .filter((s) => s.id.startsWith(SCHEDULER_PREFIX));
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}

/** Host `index` of `count`: an offset in [1, everyMs] (BullMQ reads 0 as "none"), evenly spaced. */
export function spreadOffset(index: number, count: number, everyMs: number): number {
  return 1 + Math.floor((index * everyMs) / Math.max(1, count));
}

/**
 * The moment a scheduler's job was due (Unix ms): the scheduler names each of its jobs
 * `repeat:<scheduler id>:<moment>` (BullMQ's getSchedulerNextJobId, and updateJobScheduler.lua). Not
 * `timestamp + delay`: BullMQ sets `delay` to 0 when it promotes the job, so that sum is when the job was
 * created (when the one before it started), one interval early; the 1,000-host bench read every check as
 * about 15 s late so. Undefined for a job that is not a scheduler's.
 */
export function scheduledAt(job: { id?: string | undefined }): number | undefined {
  const moment = /^repeat:.+:(\d+)$/.exec(job.id ?? "")?.[1];
  return moment === undefined ? undefined : Number(moment);
}
