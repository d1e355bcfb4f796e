import { App, HTTPReceiver, SocketModeReceiver } from "@slack/bolt";
import type { Logger } from "../log.ts";
import { registerApprovalListeners } from "./approval-listeners.ts";
import { boltLogger } from "./bolt-logger.ts";
import type { DecisionDeps } from "./decide-swap.ts";
import { type EventDeliveries, handleEachEventOnce } from "./event-deliveries.ts";
import { routeCommand } from "./route-command.ts";
import type { CommandDeps, SubCommand } from "./sub-command.ts";

export interface SlackAppOptions {
  deps: CommandDeps;
  commands: readonly SubCommand[];
  decisions: DecisionDeps;
  /** Events API deliveries already taken: Slack's retries of an event are not handled again. */
  deliveries: EventDeliveries;
  log: Logger;
  /** The slash command this app answers (default `/llm`). */
  slashCommand?: string;
}

/**
 * The thin Slack layer: Bolt verifies signatures (HTTP) or holds the Socket Mode connection, and each
 * `/llm` request is routed, authorized and acknowledged with an ephemeral answer. Work happens on the
 * worker, never here.
 */
export function createSlackApp({
  deps,
  commands,
  decisions,
  deliveries,
  log,
  slashCommand = "/llm",
}: SlackAppOptions): App {
  const { env } = deps.config;
  const logger = boltLogger(log);
  const receiver =
    env.SLACK_APP_TOKEN !== undefined
      ? new SocketModeReceiver({ appToken: env.SLACK_APP_TOKEN, logger })
      : new HTTPReceiver({
          signingSecret: requireSigningSecret(env.SLACK_SIGNING_SECRET),
          endpoints: "/slack/events",
          logger,
          customRoutes: [
            {
              path: "/healthz",
              method: ["GET"],
              handler: (_req, res) => {
                res.writeHead(200, { "content-type": "text/plain" });
                res.end("ok\n");
              },
            },
          ],
        });
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
      { user: command.user_id, channel: command.channel_id, responseUrl: command.response_url },
      commands,
      deps,
    );
    await ack({ response_type: "ephemeral", text: answer.text, blocks: answer.blocks });
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

function requireSigningSecret(secret: string | undefined): string {
  if (secret === undefined) {
    throw new Error(
      "SLACK_SIGNING_SECRET is required for the HTTP receiver (or set SLACK_APP_TOKEN for Socket Mode)",
    );
  }
  return secret;
}
