import type { Worker } from "bullmq";
import { allCommands } from "../commands/index.ts";
import { createCommandWorker } from "../jobs/command-worker.ts";
import { type RunningMonitor, startMonitor } from "../jobs/monitor/monitor-worker.ts";
import { createReportWorker, reporterSettings, reportLockMs, SWEEP_EVERY_MS } from "../jobs/report-worker.ts";
import { createSwapWorker } from "../jobs/swap/swap-worker.ts";
import { systemClock } from "./clock.ts";
import { benchWarnings } from "./config/file-schema.ts";
import { LiveConfig } from "./config/live-config.ts";
import { type Config, configSecrets } from "./config/load-config.ts";
import { samePerson } from "./config/operators-schema.ts";
import { describeError } from "./errors.ts";
import { HostRegistry } from "./host/host-registry.ts";
import { createOpsApi } from "./http/ops-api.ts";
import { operatorTokens } from "./http/ops-auth.ts";
import { OpsEndpoints } from "./http/ops-server.ts";
import { HubClient } from "./hub/hub-client.ts";
import { createLogger, type Logger } from "./log.ts";
import type { CatalogueRecipe } from "./plan/catalogue-schema.ts";
import { watchEventLoop } from "./process/event-loop-watch.ts";
import { CommandQueue } from "./queue/command-queue.ts";
import { InFlight } from "./queue/in-flight.ts";
import { ReportQueue } from "./queue/report-queue.ts";
import { SwapQueue } from "./queue/swap-queue.ts";
import { lookForStalls, WorkerStallWatch } from "./queue/worker-stall.ts";
import type { RedisClient } from "./redis/redis-client.ts";
import { createRedis, describeRedis } from "./redis/redis-connection.ts";
import { watchRedisPolicy } from "./redis/redis-policy.ts";
import { RedisReachability } from "./redis/redis-reachability.ts";
import { type ReloadResult, startConfigReload } from "./reload/start-config-reload.ts";
import { AccessControl } from "./slack/access-control.ts";
import { createSlackApp, type SlackApp, startSlackApp } from "./slack/create-slack-app.ts";
import { MeteredWebClient } from "./slack/metered-web-client.ts";
import { reply } from "./slack/reply.ts";
import { SlackPoster } from "./slack/slack-poster.ts";
import { type SlackLink, watchSocketLink } from "./slack/socket-link.ts";
import { monitorFreshMs } from "./status/monitor-view.ts";
import { migrateOnStart, ready } from "./store/start-store.ts";
import { Store } from "./store/store.ts";
import { Timers } from "./timers.ts";

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
  /** The recipes to choose from (default: src/plan/catalogue.yaml, then recipes.own); tests inject a broken one. */
  recipes?: readonly CatalogueRecipe[];
}

export interface RunningModelswap {
  /** The port the bot role listens on: the Request URL (HTTP mode) and /healthz (both modes). */
  port: number | undefined;
  /** The port of the ops server (/healthz, /metrics) when it has its own: worker role, or METRICS_PORT. */
  opsPort: number | undefined;
  log: Logger;
  /** Reads the config file again and applies it if it is valid (SIGHUP; a change to the file does it by itself). */
  reloadConfig(): Promise<ReloadResult>;
  stop(): Promise<void>;
}

/** The composition root: builds every adapter once from the config and wires them together. */
export async function startModelswap({
  config,
  roles,
  log: given,
  recipes,
}: ModelswapOptions): Promise<RunningModelswap> {
  const secrets = [...configSecrets(config), ...operatorTokens(config.file.operators, process.env)];
  const log = given ?? createLogger({ level: config.env.LOG_LEVEL, secrets });
  // what follows the config file while the process runs reads it here (src/reload/)
  const live = new LiveConfig(config);
  // /healthz, /metrics, the fleet page and the queue dashboard; it counts the Slack calls of the client below
  const ops = new OpsEndpoints({
    config,
    log: log.child({ name: "ops" }),
    hosts: () => live.current().file.hosts.map((h) => h.name),
    secrets,
    operators: () => live.current().file.operators,
    fleet: live,
  });
  const client = new MeteredWebClient(ops.slackCalls, config.env.SLACK_BOT_TOKEN, {
    slackApiUrl: config.env.SLACK_API_URL,
    retryConfig: { retries: 5, factor: 2, minTimeout: 200, maxTimeout: 5000 },
  });
  const { slackRateScale } = config.file.bench;
  const poster = new SlackPoster(client, secrets, log.child({ name: "slack" }), slackRateScale);
  const hosts = new HostRegistry(config.file.hosts, log);
  const redisConnections: RedisClient[] = [];
  let app: SlackApp | undefined;
  let queue: CommandQueue | undefined;
  const workers: Worker[] = [];
  let swaps: SwapQueue | undefined;
  let workerSwaps: SwapQueue | undefined;
  let reports: ReportQueue | undefined;
  let botReports: ReportQueue | undefined;
  const createStore = (connection: RedisClient) =>
    new Store(connection, {
      secrets,
      retention: config.file.records,
      auditMaxEntries: config.file.audit.maxEntries,
      log: log.child({ name: "store" }),
    });
  let monitor: RunningMonitor | undefined;
  let stopLookingForStalls: (() => Promise<void>) | undefined;
  let port: number | undefined;
  let slackLink: SlackLink | undefined;
  let accessControl: AccessControl | undefined;
  // Aborted by stop(): long steps hand their swap over at the next safe point instead of holding on.
  const stopping = new AbortController();
  const stopWatchingLoop = watchEventLoop(log.child({ name: "process" }));
  const redisLog = log.child({ name: "redis" });
  // every connection and worker of this process tells Redis being away through this one: once per change
  const reachability = new RedisReachability(redisLog, { where: describeRedis(config.env) });
  // the jobs this process's workers are running: a stop with none has nothing to wait for
  const inFlight = new InFlight();
  const watch = { reachability, inFlight };

  if (roles.worker) {
    const connection = createRedis(config.env, "worker");
    redisConnections.push(connection);
    reachability.watch(connection, "worker connection");
    watchRedisPolicy(connection, redisLog);
    const workerLog = log.child({ name: "worker" });
    const hub = new HubClient({
      endpoint: config.env.HF_ENDPOINT,
      ...(config.env.HF_TOKEN === undefined ? {} : { token: config.env.HF_TOKEN }),
      log: workerLog,
    });
    const store = createStore(connection);
    await migrateOnStart(store, workerLog, config);
    reports = new ReportQueue(connection);
    const reportQueue = reports;
    // /llm status asks BullMQ whether the swap that holds a host lock still has a job
    workerSwaps = new SwapQueue(connection);
    workers.push(
      createCommandWorker(
        connection,
        {
          hosts,
          poster,
          store,
          swapJobs: workerSwaps,
          log: workerLog,
          monitorFreshMs: () => monitorFreshMs(live.current().file.health),
          retention: () => live.current().file.retention,
          leaseMs: () => live.current().file.swaps.lockSeconds * 1000,
        },
        watch,
      ),
      createSwapWorker(
        connection,
        {
          config: live,
          store,
          hosts,
          hub,
          reports: reportQueue,
          log: workerLog,
          swapJobs: workerSwaps,
          stopping: stopping.signal,
          ...(recipes === undefined ? {} : { recipes }),
        },
        watch,
      ),
      createReportWorker(
        connection,
        {
          store,
          poster,
          queue: reportQueue,
          settings: () => reporterSettings(live.current().file),
          lockMs: reportLockMs(config.file),
          log: log.child({ name: "reporter" }),
          clock: systemClock,
        },
        watch,
      ),
    );
    await reportQueue
      .scheduleSweep(SWEEP_EVERY_MS)
      .catch((error: unknown) =>
        workerLog.warn({ err: describeError(error) }, "could not schedule the report sweep yet"),
      );
    // the health monitor: one scheduled check per configured host, alerts and recoveries to the channel
    monitor = await startMonitor(
      connection,
      {
        config: live,
        hosts,
        store,
        poster,
        audit: store.audit,
        // a child of the root: pino writes every binding of every ancestor, so a child of workerLog would
        // carry "name" twice ("name":"worker","name":"monitor")
        log: log.child({ name: "monitor" }),
      },
      watch,
    );
    const watched = [...workers, monitor.worker];
    // a worker that says it runs but takes no jobs while they wait: logged, and /healthz says so
    const stalls = new WorkerStallWatch({ log: workerLog, inFlight, now: () => systemClock.now() });
    stopLookingForStalls = lookForStalls(stalls, watched, connection);
    ops.watch(watched, stalls);
  }
  if (roles.bot) {
    const connection = createRedis(config.env, "producer");
    reachability.watch(connection, "bot connection");
    if (!roles.worker) watchRedisPolicy(connection, redisLog);
    await ready(connection, log);
    redisConnections.push(connection);
    queue = new CommandQueue(connection);
    swaps = new SwapQueue(connection);
    const swapQueue = swaps;
    const store = createStore(connection);
    if (!roles.worker) await migrateOnStart(store, log, config);
    botReports = new ReportQueue(connection);
    const reportQueue = botReports;
    const access = new AccessControl(config.file.requesters, config.file.approvers, client, log, {
      groupStalenessMs: config.file.access.groupStalenessMinutes * 60_000,
    });
    accessControl = access;
    app = createSlackApp({
      config: live,
      deps: { access, queue, swaps, store, reports: reportQueue },
      decisions: {
        store,
        // who is an approver now, not when the plan was posted: Slack is asked again at each decision
        isApprover: (user) => access.isApprover(user, { fresh: true }),
        allowSelfApproval: () => live.current().file.approvals.allowSelfApproval,
        sameAs: (a, b) => samePerson(live.current().file.operators, a, b),
        wake: (id) => swapQueue.wake(id),
        reportSoon: (id) => reportQueue.soon(id, "urgent"),
        tell: (user, text) => poster.ephemeral(config.file.slack.channel, user, reply(text)),
        log,
        clock: systemClock,
      },
      deliveries: store.deliveries,
      commands: allCommands(),
      log,
      routes: ops.boltRoutes(config.env.PORT),
      redact: (msg) => poster.redact(msg),
    });
    // the CLI and the HTTP API: the same commands, queues and approval gate as Slack's (src/http/ops-api.ts)
    ops.serveApi(
      createOpsApi({
        auth: ops.auth,
        config: () => live.current(),
        commands: allCommands(),
        deps: { queue, swaps, store, reports: reportQueue },
        clock: systemClock,
        log: log.child({ name: "api" }),
        secrets,
      }),
    );
    port = await startSlackApp(app, config.env);
    // in Socket Mode, a link that stays down makes the bot deaf: /healthz says so, the log says why
    slackLink = watchSocketLink(app, log.child({ name: "slack" }));
    const link = slackLink;
    if (link !== undefined) ops.watchSlack(() => link.problem());
  }
  // the config file, watched, and read again on SIGHUP (runRoles) or a note from another process
  const reload = await startConfigReload({
    live,
    roles,
    hosts,
    access: accessControl,
    monitor,
    store: createStore(redisConnections[0]!),
    watchConnection: (connection, source) => reachability.watch(connection, source),
    log,
  });
  const opsPort = await ops.start(port);
  log.info(
    { roles, hosts: hosts.names(), port, opsPort, redis: describeRedis(config.env) },
    "modelswap started",
  );
  for (const warning of benchWarnings(config.file.bench)) log.warn({ bench: config.file.bench }, warning);

  return {
    port,
    opsPort,
    log,
    reloadConfig: () => reload.reload({ kind: "signal" }),
    async stop() {
      const graceMs = live.current().file.swaps.shutdownGraceSeconds * 1000;
      log.info({ graceSeconds: graceMs / 1000 }, "stopping: no new work; running steps reach a safe point");
      stopping.abort();
      stopWatchingLoop();
      reachability.stop();
      await reload.stop();
      slackLink?.stop();
      await stopLookingForStalls?.();
      await app?.stop();
      const closed = Promise.all(
        [...workers, ...(monitor === undefined ? [] : [monitor.worker])].map((w) => w.close()),
      );
      const timers = new Timers();
      const ended = await Promise.race([
        closed.then(() => "closed" as const),
        // nothing running (or no longer): BullMQ's close() still waits for Redis, which may be away
        inFlight
          .idle()
          .then(() =>
            Promise.race([
              closed.then(() => "closed" as const),
              timers.after(IDLE_CLOSE_MS, "idle" as const),
            ]),
          ),
        timers.after(graceMs, "grace" as const),
      ]);
      timers.clear();
      if (ended !== "closed") {
        if (ended === "grace")
          log.warn(
            { graceSeconds: graceMs / 1000 },
            "grace period over: stopping with a step still running; another worker takes it over once its lock expires",
          );
        else
          log.info("no step is running, but the workers cannot reach Redis to close: stopping without them");
        // BullMQ's close() waits for the running step (a forced close returns that same wait), and for
        // Redis: cut the Redis connections and hosts instead, so nothing more is written; a step cut off
        // this way has its lock simply expire.
        for (const connection of redisConnections) connection.disconnect();
        await hosts.closeAll();
        log.info("modelswap stopped");
        return;
      }
      await monitor?.close();
      await queue?.close();
      await swaps?.close();
      await workerSwaps?.close();
      await reports?.close();
      await botReports?.close();
      await hosts.closeAll();
      await ops.close();
      await Promise.allSettled(redisConnections.map((c) => c.quit()));
      log.info("modelswap stopped");
    },
  };
}

/** How long a stop with no step running waits for the workers to close (Redis answering: milliseconds). */
const IDLE_CLOSE_MS = 1000;
