import { Queue, type Worker } from "bullmq";
import { duration } from "../format-duration.ts";
import type { Logger } from "../log.ts";
import type { RedisClient } from "../redis/redis-client.ts";
import { QUEUE_PREFIX } from "../store/keys.ts";
import type { InFlight } from "./in-flight.ts";

/** How long jobs may wait while a worker with a free slot starts none, before it is called stalled. */
export const STALL_AFTER_MS = 90_000;
/** How often each worker is looked at. */
export const STALL_LOOK_EVERY_MS = 15_000;

/** What the watch needs of a BullMQ worker (its queue's name, its slots, whether it is meant to run). */
export interface WatchedWorker {
  readonly name: string;
  readonly concurrency: number;
  isRunning(): boolean;
  isPaused(): boolean;
  readonly closing: Promise<void> | undefined;
}

interface Episode {
  /** Jobs started by this worker at the previous look. */
  started: number;
  /** Since when jobs have waited and this worker, with a free slot, started none. */
  since?: number;
  /** Jobs that waited at the last look. */
  ready?: number;
  told: boolean;
}

/**
 * Tells when one of this process's BullMQ workers has stopped taking jobs while it still says it runs:
 * jobs wait in its queue, it has a free slot, and it has started none for STALL_AFTER_MS. Its loop is then
 * stuck in a wait that never ends (one such wait was ioredis's Cluster.connect(), settling-cluster.ts;
 * BullMQ's issues list others: #3088, #4138, #4378). Nothing else would say so: the process is up, Redis
 * answers, and its swaps or Slack cards just stop. The watch logs WORKER_STALLED once per episode, and
 * /healthz answers 503 naming the worker until it takes a job again; restarting the process is the fix.
 *
 * Jobs waiting is not enough on its own: a worker whose slots are all busy (a swap that builds for an
 * hour) starts nothing while more wait, and that is fine. A worker that is paused, closing or stopped is
 * not looked at (/healthz already says stopped or closing).
 */
export class WorkerStallWatch {
  private readonly episodes = new Map<string, Episode>();

  constructor(
    private readonly deps: {
      log: Logger;
      inFlight: Pick<InFlight, "of">;
      now: () => number;
      afterMs?: number;
    },
  ) {}

  /** One look at `worker`; `ready` counts its queue's jobs that could start now (waiting, prioritized). */
  async look(worker: WatchedWorker, ready: () => Promise<number>): Promise<void> {
    const { running, started } = this.deps.inFlight.of(worker.name);
    const episode = this.episodes.get(worker.name) ?? { started, told: false };
    this.episodes.set(worker.name, episode);
    const before = episode.started;
    episode.started = started;
    const meantToRun = worker.isRunning() && !worker.isPaused() && worker.closing === undefined;
    if (started !== before) return this.clear(worker.name, "took a job");
    if (!meantToRun || running >= worker.concurrency) return this.clear(worker.name);
    let waiting: number;
    try {
      waiting = await ready();
    } catch {
      return; // Redis does not answer: RedisReachability says so, and this look proves nothing
    }
    if (waiting === 0) return this.clear(worker.name);
    const now = this.deps.now();
    episode.since ??= now;
    episode.ready = waiting;
    const forMs = now - episode.since;
    if (episode.told || forMs < (this.deps.afterMs ?? STALL_AFTER_MS)) return;
    episode.told = true;
    this.deps.log.error(
      { code: "WORKER_STALLED", worker: worker.name, waiting, seconds: Math.round(forMs / 1000), running },
      `the ${worker.name} worker has started no job for ${duration(forMs / 1000)} while ${waiting} wait and it has a free slot: it is stuck. Fix: restart this process (modelswap start, or its worker role); its jobs are safe in Redis and running swaps resume from their saved step. The log lines before this one may say why`,
    );
  }

  /** Why `name`'s worker is stalled, for /healthz; undefined while it is not. */
  stalled(name: string): string | undefined {
    const episode = this.episodes.get(name);
    if (episode?.told !== true || episode.since === undefined) return undefined;
    const seconds = Math.round((this.deps.now() - episode.since) / 1000);
    return `the ${name} worker has started no job for ${duration(seconds)} while ${episode.ready ?? "some"} wait: restart this process`;
  }

  private clear(name: string, why?: "took a job"): void {
    const episode = this.episodes.get(name);
    if (episode === undefined) return;
    if (episode.told && why !== undefined) {
      this.deps.log.info({ worker: name }, `the ${name} worker takes jobs again`);
    }
    episode.since = undefined;
    episode.ready = undefined;
    episode.told = false;
  }
}

/**
 * Looks at each of `workers` every STALL_LOOK_EVERY_MS, counting its queue's ready jobs through
 * `connection` (the workers' own). Returns the function that stops it (and closes its queues).
 */
export function lookForStalls(
  watch: WorkerStallWatch,
  workers: readonly Worker[],
  connection: RedisClient,
  everyMs = STALL_LOOK_EVERY_MS,
): () => Promise<void> {
  const queues = new Map(
    workers.map((w) => {
      const queue = new Queue(w.name, { connection, prefix: QUEUE_PREFIX });
      queue.on("error", () => undefined); // Redis away: RedisReachability says so
      return [w.name, queue] as const;
    }),
  );
  const ready = async (name: string) => {
    const counts = await (queues.get(name) as Queue).getJobCounts("wait", "prioritized");
    return (counts.wait ?? 0) + (counts.prioritized ?? 0);
  };
  let looking = false;
  const timer = setInterval(() => {
    if (looking) return; // the last look still waits for Redis
    looking = true;
    void Promise.all(workers.map((w) => watch.look(w, () => ready(w.name)))).finally(() => {
      looking = false;
    });
  }, everyMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await Promise.all([...queues.values()].map((q) => q.close().catch(() => undefined)));
  };
}
