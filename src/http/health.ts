import type { Worker } from "bullmq";
import { type RedisClient, requireSlotOwner } from "../redis/redis-client.ts";
import { withTimeout } from "../with-timeout.ts";

export type WorkerState = "running" | "closing" | "stopped" | "stalled";

/** What `/healthz` answers: 200 when `ok`, 503 with the `problems` otherwise. */
export interface HealthReport {
  ok: boolean;
  /** `ok`, or why Redis did not answer a PING. */
  redis: string;
  /** This process's BullMQ workers by queue (none for the bot role alone). */
  workers: Record<string, WorkerState>;
  /** `down` when the Socket Mode link to Slack has been down past its bound (absent otherwise). */
  slack?: "down";
  /** One line per thing that is wrong, for people reading the 503. */
  problems?: string[];
}

/** A worker whose loop stopped (it crashed) or that is shutting down takes no new jobs. */
export function workerState(worker: Worker): WorkerState {
  if (worker.closing !== undefined) return "closing";
  return worker.isRunning() ? "running" : "stopped";
}

/**
 * The bot's own health: Redis answers a PING within `timeoutMs`, each of this process's workers is
 * running (not stopped, not closing, not stalled: `stalled` says why one takes no jobs while they wait,
 * worker-stall.ts), and Slack reaches the bot (`slack`: its Socket Mode link, src/slack/socket-link.ts). A process in shutdown therefore answers 503, so a load balancer or orchestrator stops
 * sending it work before it exits.
 */
export async function checkBotHealth(
  redis: RedisClient,
  workers: readonly Worker[],
  {
    timeoutMs = 1000,
    stalled = () => undefined,
    slack = () => undefined,
  }: {
    timeoutMs?: number;
    stalled?: (worker: string) => string | undefined;
    /** Why Slack does not reach this bot (its Socket Mode link down past its bound), if it does not. */
    slack?: () => string | undefined;
  } = {},
): Promise<HealthReport> {
  const problems: string[] = [];
  const deaf = slack();
  let redisState = "ok";
  try {
    await ping(redis, timeoutMs);
  } catch (error) {
    // ioredis's own words for a dropped connection are about its offline queue: say what it means
    const why = redis.status === "ready" ? (error as Error).message : `not connected, ${redis.status}`;
    redisState = `unreachable: ${why}`;
    problems.push(
      `Redis does not answer (${why}): check REDIS_URL (or REDIS_SENTINELS, REDIS_CLUSTER_NODES) and the redis-server`,
    );
  }
  const states: Record<string, WorkerState> = {};
  for (const worker of workers) {
    const state = workerState(worker);
    const stuck = state === "running" ? stalled(worker.name) : undefined;
    states[worker.name] = stuck === undefined ? state : "stalled";
    if (stuck !== undefined) problems.push(stuck);
    else if (state !== "running") problems.push(`the ${worker.name} worker is ${state}`);
  }
  if (deaf !== undefined) problems.push(deaf);
  return {
    ok: problems.length === 0,
    redis: redisState,
    workers: states,
    ...(deaf === undefined ? {} : { slack: "down" }),
    ...(problems.length === 0 ? {} : { problems }),
  };
}

async function ping(redis: RedisClient, timeoutMs: number): Promise<void> {
  // on a Cluster, the node that holds modelswap's keys: another node answering proves nothing
  const answer = await withTimeout(
    requireSlotOwner(redis).then((node) => node.ping()),
    timeoutMs,
    () => new Error(`no answer to PING within ${timeoutMs} ms`),
  );
  if (answer !== "PONG") throw new Error(`PING answered ${String(answer)}`);
}
