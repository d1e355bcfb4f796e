import type { App } from "@slack/bolt";
import type { Worker } from "bullmq";
import type { Redis } from "ioredis";
import { allCommands } from "../commands/index.ts";
import { createCommandWorker } from "../jobs/command-worker.ts";
import { type RunningMonitor, startMonitor } from "../jobs/monitor/monitor-worker.ts";
import { createSwapWorker } from "../jobs/swap/swap-worker.ts";
import { AuditLog } from "./audit/audit-log.ts";
import { type Config, configSecrets } from "./config/load-config.ts";
import { HostRegistry } from "./host/host-registry.ts";
import { OpsEndpoints } from "./http/ops-server.ts";
import { HubClient } from "./hub/hub-client.ts";
import { createLogger, type Logger } from "./log.ts";
import { MeteredWebClient } from "./metrics/slack-calls.ts";
import type { Recipe } from "./plan/recipes.ts";
import { CommandQueue } from "./queue/command-queue.ts";
import { createRedis, describeRedis } from "./queue/redis-connection.ts";
import { watchRedisPolicy } from "./queue/redis-policy.ts";
import { SwapQueue } from "./queue/swap-queue.ts";
import { SlackPoster } from "./reporter/slack-poster.ts";
import { AccessControl } from "./slack/access-control.ts";
import { createSlackApp, startSlackApp } from "./slack/create-slack-app.ts";
import { EventDeliveries } from "./slack/event-deliveries.ts";
import { SwapStore } from "./swap/swap-store.ts";

export interface Roles {
  /** Answers Slack: verifies, authorizes, acks, enqueues. */
  bot: boolean;
  /** Runs jobs: talks to hosts and posts results. */
  worker: boolean;
}

export interface ModelswapOptions {
  config: Config;
  roles: Roles;
  log?: Logger;
  /** The recipe table (default: src/plan/recipes.ts); tests inject a broken one. */
  recipes?: readonly Recipe[];
}

export interface RunningModelswap {
  /** The port the bot role listens on: the Request URL (HTTP mode) and /healthz (both modes). */
  port: number | undefined;
  /** The port of the ops server (/healthz, /metrics) when it has its own: worker role, or METRICS_PORT. */
  opsPort: number | undefined;
  log: Logger;
  stop(): Promise<void>;
}

/** The composition root: builds every adapter once from the config and wires them together. */
export async function startModelswap({
  config,
  roles,
  log: given,
  recipes,
}: ModelswapOptions): Promise<RunningModelswap> {
  const secrets = configSecrets(config);
  const log = given ?? createLogger({ level: config.env.LOG_LEVEL, secrets });
  // /healthz, /metrics and the queue dashboard; it counts the Slack calls of the client below
  const ops = new OpsEndpoints({
    config,
    log: log.child({ name: "ops" }),
    hosts: config.file.hosts.map((h) => h.name),
    secrets,
  });
  const client = new MeteredWebClient(ops.slackCalls, config.env.SLACK_BOT_TOKEN, {
    slackApiUrl: config.env.SLACK_API_URL,
    retryConfig: { retries: 5, factor: 2, minTimeout: 200, maxTimeout: 5000 },
  });
  const poster = new SlackPoster(client, secrets, log.child({ name: "slack" }));
  const hosts = new HostRegistry(config.file.hosts, log);
  const redisConnections: Redis[] = [];
  let app: App | undefined;
  let queue: CommandQueue | undefined;
  const workers: Worker[] = [];
  let swaps: SwapQueue | undefined;
  let monitor: RunningMonitor | undefined;
  let port: number | undefined;
  // Aborted by stop(): long steps hand their swap over at the next safe point instead of holding on.
  const stopping = new AbortController();

  if (roles.worker) {
    const connection = createRedis(config.env, "worker");
    redisConnections.push(connection);
    watchRedisPolicy(connection, log.child({ name: "redis" }));
    const workerLog = log.child({ name: "worker" });
    const hub = new HubClient({
      endpoint: config.env.HF_ENDPOINT,
      ...(config.env.HF_TOKEN === undefined ? {} : { token: config.env.HF_TOKEN }),
      log: workerLog,
    });
    const store = new SwapStore(connection, { secrets });
    const audit = new AuditLog(connection, { maxEntries: config.file.audit.maxEntries, secrets });
    workers.push(
      createCommandWorker(connection, { hosts, poster, store, log: workerLog }),
      createSwapWorker(connection, {
        config,
        store,
        hosts,
        hub,
        poster,
        audit,
        log: workerLog,
        stopping: stopping.signal,
        ...(recipes === undefined ? {} : { recipes }),
      }),
    );
    // the health monitor: one scheduled check per configured host, alerts and recoveries to the channel
    monitor = await startMonitor(connection, {
      config,
      hosts,
      store,
      poster,
      audit,
      log: workerLog.child({ name: "monitor" }),
    });
    ops.watch(...workers, monitor.worker);
  }
  if (roles.bot) {
    const connection = createRedis(config.env, "producer");
    connection.on("error", (error) => log.warn({ err: error.message }, "redis connection error (bot)"));
    if (!roles.worker) watchRedisPolicy(connection, log.child({ name: "redis" }));
    await ready(connection, log);
    redisConnections.push(connection);
    queue = new CommandQueue(connection);
    swaps = new SwapQueue(connection);
    const store = new SwapStore(connection, { secrets });
    const audit = new AuditLog(connection, { maxEntries: config.file.audit.maxEntries, secrets });
    const access = new AccessControl(config.file.requesters, config.file.approvers, client, log);
    app = createSlackApp({
      deps: { config, access, queue, swaps, store, audit },
      decisions: { config, store, access, swaps, poster, audit, log },
      deliveries: new EventDeliveries(connection),
      commands: allCommands(),
      log,
      routes: ops.boltRoutes(config.env.PORT),
    });
    port = await startSlackApp(app, config.env);
  }
  const opsPort = await ops.start(port);
  log.info(
    { roles, hosts: hosts.names(), port, opsPort, redis: describeRedis(config.env) },
    "modelswap started",
  );

  return {
    port,
    opsPort,
    log,
    async stop() {
      const graceMs = config.file.swaps.shutdownGraceSeconds * 1000;
      log.info({ graceSeconds: graceMs / 1000 }, "stopping: no new work; running steps reach a safe point");
      stopping.abort();
      await app?.stop();
      const closed = Promise.all(workers.map((w) => w.close()));
      let timer: NodeJS.Timeout | undefined;
      const inTime = await Promise.race([
        closed.then(() => true),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), graceMs);
        }),
      ]);
      clearTimeout(timer);
      if (!inTime) {
        log.warn(
          { graceSeconds: graceMs / 1000 },
          "grace period over: stopping with a step still running; another worker takes it over once its lock expires",
        );
        // BullMQ's close() waits for the running step (a forced close returns that same wait): cut the
        // step's Redis and hosts instead, so it can write nothing more; its lock then simply expires.
        for (const connection of redisConnections) connection.disconnect();
        await hosts.closeAll();
        log.info("modelswap stopped");
        return;
      }
      await monitor?.close();
      await queue?.close();
      await swaps?.close();
      await hosts.closeAll();
      await ops.close();
      await Promise.allSettled(redisConnections.map((c) => c.quit()));
      log.info("modelswap stopped");
    },
  };
}

/** Waits (briefly) for a fail-fast connection to be up, so the first command does not race it. */
async function ready(connection: Redis, log: Logger): Promise<void> {
  if (connection.status === "ready") return;
  const up = await Promise.race([
    new Promise<boolean>((resolve) => connection.once("ready", () => resolve(true))),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 5000).unref()),
  ]);
  if (!up)
    log.warn("Redis is not reachable yet: commands will answer that the queue is unavailable until it is");
}
