import type { Worker } from "bullmq";
import type { Redis } from "ioredis";
import { withTimeout } from "../with-timeout.ts";

export type WorkerState = "running" | "closing" | "stopped";

/** What `/healthz` answers: 200 when `ok`, 503 with the `problems` otherwise. */
export interface HealthReport {
  ok: boolean;
  /** `ok`, or why Redis did not answer a PING. */
  redis: string;
  /** This process's BullMQ workers by queue (none for the bot role alone). */
  workers: Record<string, WorkerState>;
  /** One line per thing that is wrong, for people reading the 503. */
  problems?: string[];
}

/** A worker whose loop stopped (it crashed) or that is shutting down takes no new jobs. */
export function workerState(worker: Worker): WorkerState {
  if (worker.closing !== undefined) return "closing";
  return worker.isRunning() ? "running" : "stopped";
}

/**
 * The bot's own health: Redis answers a PING within `timeoutMs`, and each of this process's workers is
 * running (not stopped, not closing). A process in shutdown therefore answers 503, so a load balancer or
 * orchestrator stops sending it work before it exits.
 */
export async function checkBotHealth(
  redis: Redis,
  workers: readonly Worker[],
  timeoutMs = 1000,
): Promise<HealthReport> {
  const problems: string[] = [];
  let redisState = "ok";
  try {
    await ping(redis, timeoutMs);
  } catch (error) {
    // ioredis's own words for a dropped connection are about its offline queue: say what it means
    const why = redis.status === "ready" ? (error as Error).message : `not connected, ${redis.status}`;
    redisState = `unreachable: ${why}`;
    problems.push(`Redis does not answer (${why}): check REDIS_URL and the redis-server`);
  }
  const states: Record<string, WorkerState> = {};
  for (const worker of workers) {
    const state = workerState(worker);
    states[worker.name] = state;
    if (state !== "running") problems.push(`the ${worker.name} worker is ${state}`);
  }
  return {
    ok: problems.length === 0,
    redis: redisState,
    workers: states,
    ...(problems.length === 0 ? {} : { problems }),
  };
}

async function ping(redis: Redis, timeoutMs: number): Promise<void> {
  const answer = await withTimeout(
    redis.ping(),
    timeoutMs,
    () => new Error(`no answer to PING within ${timeoutMs} ms`),
  );
  if (answer !== "PONG") throw new Error(`PING answered ${String(answer)}`);
}
