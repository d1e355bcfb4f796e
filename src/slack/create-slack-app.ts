import { createServer } from "node:http";
import { App, type CustomRoute, HTTPReceiver, SocketModeReceiver } from "@slack/bolt";
import type { DecideDeps } from "../approval/decide.ts";
import type { ConfigSource } from "../config/live-config.ts";
import type { Config } from "../config/load-config.ts";
import { CodedError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { EventDeliveries } from "../store/event-deliveries.ts";
import { registerApprovalListeners } from "./approval-listeners.ts";
import type { SlackMessage } from "./blocks.ts";
import { boltLogger } from "./bolt-logger.ts";
import { handleEachEventOnce } from "./event-deliveries.ts";
import { guardAgainstReplays } from "./replay-guard.ts";
import { reply } from "./reply.ts";
import { routeCommand } from "./route-command.ts";
import { APP_TOKEN_FIX, slackErrorWord } from "./slack-error-word.ts";
import type { CommandDeps, SubCommand } from "./sub-command.ts";

export interface SlackAppOptions {
  /** Each command gets the config as it is when it arrives (a reload may change it). */
  config: ConfigSource;
  deps: Omit<CommandDeps, "config">;
  commands: readonly SubCommand[];
  decisions: DecideDeps;
  /** Events API deliveries already taken: Slack's retries of an event are not handled again. */
  deliveries: EventDeliveries;
  log: Logger;
  /** The slash command this app answers (default `/llm`). */
  slashCommand?: string;
  /** The HTTP routes served beside Slack's (the ops endpoints: /healthz, /metrics); default a bare /healthz. */
  routes?: CustomRoute[];
  /**
   * Takes the secrets out of an answer before it goes to Slack (the poster's redact): a slash command's
   * answer is the ack's body, which does not go through the poster.
   */
  redact: (msg: SlackMessage) => SlackMessage;
}

/** The Slack app as the composition root holds it (Bolt stays inside the Slack layer). */
export type SlackApp = App;

/**
 * The thin Slack layer: Bolt verifies signatures (HTTP) or holds the Socket Mode connection, and each
 * `/llm` request is routed, authorized and acknowledged with an ephemeral answer. Work happens on the
 * worker, never here.
 */
export function createSlackApp({
  config,
  deps,
  commands,
  decisions,
  deliveries,
  log,
  slashCommand = "/llm",
  routes,
  redact,
}: SlackAppOptions): App {
  const { env } = config.current();
  const logger = boltLogger(log);
  // Served on PORT in both modes: Socket Mode needs no Request URL, but probes still need /healthz.
  const customRoutes: CustomRoute[] = routes ?? [
    {
      path: "/healthz",
      method: ["GET"],
      handler: (_req, res) => {
        res.writeHead(200, { "content-type": "text/plain" });
        res.end("ok\n");
      },
    },
  ];
  const receiver =
    env.SLACK_APP_TOKEN !== undefined
      ? new SocketModeReceiver({
          appToken: env.SLACK_APP_TOKEN,
          logger,
          customRoutes,
          // apps.connections.open goes to the same Slack as every other call (SLACK_API_URL), not
          // always to slack.com; `port` is where the custom routes listen. It is asked once per try: a
          // failed open is retried by the link's watch with its own pause, said in the log and /healthz
          // (socket-link.ts), not by the client's policy, which retries one call for half an hour in silence
          installerOptions: {
            port: env.PORT,
            clientOptions: { slackApiUrl: env.SLACK_API_URL, retryConfig: { retries: 0 } },
          },
        })
      : httpReceiver(requireSigningSecret(env.SLACK_SIGNING_SECRET), deps, log, logger, customRoutes, redact);
  const app = new App({
    token: env.SLACK_BOT_TOKEN,
    receiver,
    logger,
    clientOptions: { slackApiUrl: env.SLACK_API_URL },
  });

  app.use(handleEachEventOnce(deliveries, log));

  app.command(slashCommand, async ({ command, ack }) => {
    const started = Date.now();
    const answer = await routeCommand(
      command.text ?? "",
      { user: command.user_id, channel: command.channel_id },
      commands,
      { ...deps, config: config.current() },
    );
    const clean = redact(answer);
    await ack({ response_type: "ephemeral", text: clean.text, blocks: clean.blocks });
    log.info(
      { user: command.user_id, sub: command.text.split(/\s+/)[0] ?? "", ms: Date.now() - started },
      "command acked",
    );
  });

  registerApprovalListeners(app, decisions);

  app.error(async (error) => {
    log.error({ err: error }, "unhandled error in the Slack layer");
  });
  return app;
}

/** Bolt's HTTP receiver on /slack/events, each signed request accepted once (replay-guard.ts). */
function httpReceiver(
  signingSecret: string,
  deps: Pick<CommandDeps, "store">,
  log: Logger,
  logger: ReturnType<typeof boltLogger>,
  customRoutes: CustomRoute[],
  redact: (msg: SlackMessage) => SlackMessage,
): HTTPReceiver {
  const endpoints = ["/slack/events"];
  const receiver = new HTTPReceiver({ signingSecret, endpoints, logger, customRoutes });
  guardAgainstReplays(receiver, {
    signingSecret,
    requests: deps.store.signedRequests,
    log: log.child({ name: "slack-requests" }),
    endpoints,
    redact: (text) => redact(reply(text)).text,
  });
  return receiver;
}

/**
 * Starts the app and returns the port it listens on: in HTTP mode Bolt's server (the Request URL and
 * /healthz), in Socket Mode the connection to Slack plus /healthz. Resolves once Slack said `hello`.
 */
export async function startSlackApp(app: App, env: Config["env"]): Promise<number> {
  // Bolt's Socket Mode receiver starts its HTTP server without waiting for it: a taken port is an
  // 'error' event nobody listens to, which crashes the process. So the port is tried first.
  if (env.SLACK_APP_TOKEN !== undefined) await tryPort(env.PORT);
  try {
    await app.start(env.PORT);
  } catch (error) {
    throw (
      portError(error, env.PORT) ?? (env.SLACK_APP_TOKEN === undefined ? error : socketModeStartError(error))
    );
  }
  return env.PORT;
}

/** Binds `port` as Bolt will (every interface) and lets it go again; a refusal is a coded error. */
async function tryPort(port: number): Promise<void> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error) => reject(portError(error, port) ?? error));
    server.listen(port, () => server.close(() => resolve()));
  });
}

/** PORT taken or not ours to bind: the operator picks another. */
function portError(error: unknown, port: number): CodedError | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (code !== "EADDRINUSE" && code !== "EACCES") return undefined;
  return new CodedError(
    "CONFIG_INVALID",
    `the bot cannot listen on PORT ${port} (${code === "EADDRINUSE" ? "already in use" : "permission denied"})`,
    "set PORT to a free port above 1024 (it serves /healthz, and in HTTP mode Slack's Request URL)",
    { cause: error },
  );
}

/** Slack's refusal of the app-level token, in words an operator can act on. */
function socketModeStartError(error: unknown): unknown {
  const slackError = slackErrorWord(error);
  if (slackError === undefined) return error;
  return new CodedError(
    "SLACK_API_ERROR",
    `Slack refused to open a Socket Mode connection with SLACK_APP_TOKEN (${slackError})`,
    APP_TOKEN_FIX,
    { cause: error },
  );
}

function requireSigningSecret(secret: string | undefined): string {
  if (secret === undefined) {
    throw new Error(
      "SLACK_SIGNING_SECRET is required for the HTTP receiver (or set SLACK_APP_TOKEN for Socket Mode)",
    );
  }
  return secret;
}
