import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Queue, type Worker } from "bullmq";
import { Registry } from "prom-client";
import type { ConfigSource } from "../config/live-config.ts";
import type { Config } from "../config/load-config.ts";
import type { OperatorConfig } from "../config/operators-schema.ts";
import { type Logger, redactSecrets, redactSecretsInJson } from "../log.ts";
import { MetricsCollector } from "../metrics/collect.ts";
import { SlackCallMetrics } from "../metrics/slack-calls.ts";
import { COMMAND_QUEUE } from "../queue/command-queue.ts";
import { MONITOR_QUEUE } from "../queue/monitor-queue.ts";
import { REPORT_QUEUE } from "../queue/report-queue.ts";
import { SWAP_QUEUE } from "../queue/swap-queue.ts";
import type { WorkerStallWatch } from "../queue/worker-stall.ts";
import type { RedisClient } from "../redis/redis-client.ts";
import { createRedis } from "../redis/redis-connection.ts";
import { readFleetView } from "../status/fleet-view.ts";
import { monitorFreshMs } from "../status/monitor-view.ts";
import { QUEUE_PREFIX } from "../store/keys.ts";
import { Store } from "../store/store.ts";
import { createDashboard, DASHBOARD_PATH } from "./dashboard.ts";
import { FLEET_PATH } from "./fleet-page.ts";
import { createFleetRoutes, sharedRead } from "./fleet-routes.ts";
import { checkBotHealth } from "./health.ts";
import { OpsAuth, sendJson } from "./ops-auth.ts";

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** An HTTP route served beside Slack's on the bot's port (the shape Bolt's custom routes take). */
export interface HttpRoute {
  path: string;
  method: string[];
  handler: Handler;
}

export interface OpsOptions {
  config: Config;
  log: Logger;
  /** The configured hosts' names, as they are now (a reload may change them). */
  hosts: () => readonly string[];
  /** Values never shown in an answer (a Redis error could carry one). */
  secrets: readonly string[];
  /** The config's `operators:` as they are now: who may use the API (src/http/ops-auth.ts). */
  operators?: () => readonly OperatorConfig[];
  /**
   * The config as it is now, for the fleet page (/fleet, for operators with the read scope): its hosts and
   * the monitor's interval. Without it there is no page.
   */
  fleet?: ConfigSource;
}

/**
 * The bot's operations endpoints: `/healthz` (Redis answers, this process's workers run), `/metrics`
 * (Prometheus text format) and, when MODELSWAP_DASHBOARD_PASSWORD is set, the bull-board dashboard at
 * `/admin/queues` behind basic auth. They are served by Bolt's HTTP receiver (as custom routes, on PORT)
 * and, when there is no such receiver (Socket Mode, the worker role) or METRICS_PORT is set, by a small
 * server of their own. Reads go through a fail-fast Redis connection of their own, so a scrape or a
 * health probe while Redis is down answers at once.
 */
export class OpsEndpoints {
  /** This process's own counters (everything else is read from Redis at scrape time). */
  readonly registry = new Registry();
  readonly slackCalls = new SlackCallMetrics(this.registry);
  private readonly redis: RedisClient;
  private readonly queues: Queue[];
  private readonly collector: MetricsCollector;
  private readonly workers: Worker[] = [];
  private stalled: (worker: string) => string | undefined = () => undefined;
  private slack: () => string | undefined = () => undefined;
  private readonly dashboard: Handler | undefined;
  /** The HTTP API (src/http/ops-api.ts), once the bot role serves it. */
  private api: Handler | undefined;
  /** Operators' tokens and scopes: the API's check, and any page of this server that needs one. */
  readonly auth: OpsAuth;
  private readonly fleetPage: Handler | undefined;
  private server: Server | undefined;
  private redisWasUp = true;

  constructor(private readonly options: OpsOptions) {
    const { env } = options.config;
    this.redis = createRedis(env, "producer");
    this.redis.on("error", () => undefined); // reported by /healthz and modelswap_redis_up
    this.queues = [COMMAND_QUEUE, SWAP_QUEUE, MONITOR_QUEUE, REPORT_QUEUE].map((name) => {
      const queue = new Queue(name, { connection: this.redis, prefix: QUEUE_PREFIX });
      queue.on("error", () => undefined);
      return queue;
    });
    this.auth = new OpsAuth({ operators: options.operators ?? (() => []), log: options.log });
    this.collector = new MetricsCollector({
      registry: this.registry,
      redis: this.redis,
      queues: this.queues,
      hosts: options.hosts,
      log: options.log.child({ name: "metrics" }),
    });
    this.dashboard =
      env.MODELSWAP_DASHBOARD_PASSWORD === undefined
        ? undefined
        : createDashboard({
            queues: this.queues,
            user: env.MODELSWAP_DASHBOARD_USER,
            password: env.MODELSWAP_DASHBOARD_PASSWORD,
            log: options.log,
          });
    this.fleetPage = options.fleet === undefined ? undefined : this.createFleetPage(options.fleet);
  }

  /** The fleet page over this process's own fail-fast connection: a page open while Redis is down says so. */
  private createFleetPage(live: ConfigSource): Handler {
    const log = this.options.log.child({ name: "fleet-page" });
    const store = new Store(this.redis, { secrets: this.options.secrets, log });
    const swapQueue = this.queues.find((q) => q.name === SWAP_QUEUE)!;
    const jobState = async (id: string) => {
      const state = await (await swapQueue.getJob(id))?.getState();
      return state === undefined || state === "unknown" ? undefined : state;
    };
    // many open pages share one read a second
    const view = sharedRead(1000, () => {
      const { file } = live.current();
      return readFleetView(
        { hosts: file.hosts, freshMs: monitorFreshMs(file.health), historyLimit: 25, auditLimit: 40 },
        { store, jobState, log },
      );
    });
    return createFleetRoutes({ auth: this.auth, view, log });
  }

  /**
   * The BullMQ workers of this process, reported (and required to run) by /healthz; `stalls` says which
   * of them takes no jobs while jobs wait (worker-stall.ts).
   */
  watch(workers: readonly Worker[], stalls?: Pick<WorkerStallWatch, "stalled">): void {
    this.workers.push(...workers);
    if (stalls !== undefined) this.stalled = (name) => stalls.stalled(name);
  }

  /** Serves the HTTP API at /api/ (the bot role: it holds the queues the API's commands use). */
  serveApi(handler: Handler): void {
    this.api = handler;
    for (const { name, why } of this.auth.unusable())
      this.options.log.warn(
        { operator: name, why },
        "an operator's token cannot be used: the API refuses that operator",
      );
  }

  /** The bot role's link to Slack, reported by /healthz: a deaf bot is not healthy. */
  watchSlack(problem: () => string | undefined): void {
    this.slack = problem;
  }

  /**
   * The custom routes for Bolt's HTTP receiver on PORT. With METRICS_PORT set to another port, only
   * /healthz stays on the Slack port: /metrics and the dashboard are then served on METRICS_PORT alone,
   * so the port that faces Slack (often public) shows neither.
   */
  boltRoutes(slackPort: number): HttpRoute[] {
    const routes: HttpRoute[] = [
      { path: "/healthz", method: ["GET"], handler: (_req, res) => this.health(res) },
    ];
    if (this.ownPort(slackPort) !== undefined) return routes;
    routes.push({ path: "/metrics", method: ["GET"], handler: (_req, res) => this.metrics(res) });
    routes.push({
      path: "/api{/*rest}",
      method: ["GET", "POST"],
      handler: (req, res) => this.serveApiRequest(req, res),
    });
    const fleetPage = this.fleetPage;
    if (fleetPage !== undefined)
      routes.push({ path: `${FLEET_PATH}{/*rest}`, method: ["GET", "POST"], handler: fleetPage });
    const dashboard = this.dashboard;
    if (dashboard !== undefined) {
      routes.push({
        path: `${DASHBOARD_PATH}{/*rest}`,
        method: ["GET", "POST", "PUT", "PATCH", "DELETE"],
        handler: (req, res) => dashboard(req, res),
      });
    }
    return routes;
  }

  /**
   * The port of the ops server, when this process needs one: METRICS_PORT when set (and not the Slack
   * port), else PORT when Bolt serves no HTTP here (`slackPort` undefined).
   */
  ownPort(slackPort: number | undefined): number | undefined {
    const { METRICS_PORT, PORT } = this.options.config.env;
    if (METRICS_PORT !== undefined) return METRICS_PORT === slackPort ? undefined : METRICS_PORT;
    return slackPort === undefined ? PORT : undefined;
  }

  /**
   * Starts the ops server when this process needs one. A port already taken is a warning, not a
   * failure: metrics never keep the bot from working (`modelswap start` and `modelswap worker` on one
   * machine both default to PORT; give one of them METRICS_PORT).
   */
  async start(slackPort: number | undefined): Promise<number | undefined> {
    const port = this.ownPort(slackPort);
    if (port === undefined) return undefined;
    const server = createServer((req, res) => this.route(req, res));
    try {
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, () => {
          server.off("error", reject);
          resolve();
        });
      });
    } catch (error) {
      this.options.log.warn(
        { port, err: (error as Error).message, code: (error as NodeJS.ErrnoException).code },
        "could not serve /healthz and /metrics: the port is taken; set METRICS_PORT to a free port",
      );
      return undefined;
    }
    this.server = server;
    const bound = (server.address() as AddressInfo).port;
    this.options.log.info(
      { port: bound, dashboard: this.dashboard !== undefined },
      "serving /healthz and /metrics on their own port",
    );
    return bound;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server !== undefined) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    await Promise.allSettled(this.queues.map((q) => q.close()));
    this.redis.disconnect();
  }

  private route(req: IncomingMessage, res: ServerResponse): void {
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    if (req.method === "GET" && path === "/healthz") this.health(res);
    else if (req.method === "GET" && path === "/metrics") this.metrics(res);
    else if (path === "/api" || path.startsWith("/api/")) this.serveApiRequest(req, res);
    else if (
      this.dashboard !== undefined &&
      (path === DASHBOARD_PATH || path.startsWith(`${DASHBOARD_PATH}/`))
    )
      this.dashboard(req, res);
    else if (this.fleetPage !== undefined && (path === FLEET_PATH || path.startsWith(`${FLEET_PATH}/`)))
      this.fleetPage(req, res);
    else {
      res.writeHead(404, { "content-type": "text/plain; charset=utf-8" });
      res.end("not found: this port serves /healthz, /metrics, /api/ and /fleet\n");
    }
  }

  private serveApiRequest(req: IncomingMessage, res: ServerResponse): void {
    if (this.api !== undefined) {
      this.api(req, res);
      return;
    }
    sendJson(res, 404, {
      error: {
        code: "API_NOT_SERVED",
        message:
          "this process runs the worker role alone: the API is served by the process that runs the bot role",
        fix: "point MODELSWAP_API_URL at the bot's ops port (`modelswap start` or `modelswap bot`)",
      },
    });
  }

  private health(res: ServerResponse): void {
    void checkBotHealth(this.redis, this.workers, { stalled: this.stalled, slack: this.slack })
      .then((report) => {
        const body = redactSecretsInJson(JSON.stringify(report), this.options.secrets);
        res.writeHead(report.ok ? 200 : 503, {
          "content-type": "application/json",
          "cache-control": "no-store",
        });
        res.end(`${body}\n`);
      })
      .catch((error: unknown) => this.fail(res, error));
  }

  private metrics(res: ServerResponse): void {
    void this.collector
      .scrape()
      .then(({ text, redisError }) => {
        this.noteRedis(redisError);
        res.writeHead(200, { "content-type": this.registry.contentType, "cache-control": "no-store" });
        res.end(text);
      })
      .catch((error: unknown) => this.fail(res, error));
  }

  /** Says once per outage that scrapes lack the Redis families, and once that they are back. */
  private noteRedis(error: string | undefined): void {
    const up = error === undefined;
    if (up === this.redisWasUp) return;
    this.redisWasUp = up;
    if (up) this.options.log.info("metrics: RedisClient answers again; scrapes are complete");
    else
      this.options.log.warn(
        { err: redactSecrets(error, this.options.secrets) },
        "metrics: RedisClient did not answer; scrapes carry only this process's counters and modelswap_redis_up 0",
      );
  }

  private fail(res: ServerResponse, error: unknown): void {
    this.options.log.error({ err: (error as Error).message }, "ops endpoint failed");
    if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain; charset=utf-8" });
    res.end("internal error (see the bot's log)\n");
  }
}
