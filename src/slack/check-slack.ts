import { WebClient } from "@slack/web-api";
import { type DoctorRow, pass, problem } from "../doctor/doctor-row.ts";
import { manifestBotScopes } from "./manifest-scopes.ts";
import { APP_TOKEN_FIX, networkReason, SILENT_SLACK_LOGGER, slackErrorWord } from "./slack-error-word.ts";

export interface SlackCheckInput {
  botToken: string;
  appToken?: string | undefined;
  apiUrl: string;
  channel: string;
  timeoutMs: number;
}

const TARGET = "Slack";
const TOKEN_ERRORS = new Set([
  "invalid_auth",
  "not_authed",
  "account_inactive",
  "token_revoked",
  "token_expired",
  "not_allowed_token_type",
]);

/**
 * `modelswap doctor`'s Slack rows, through the Web API client the bot uses: the bot token (`auth.test`),
 * the scopes it was granted (Slack sends them in the `x-oauth-scopes` header of every Web API answer,
 * which the client puts in `response_metadata.scopes`) against manifest.yml's, the app-level token
 * (`apps.connections.open`; the WebSocket is never opened), and the channel (`conversations.history`,
 * one message, read-only, under channels:history, which the manifest grants). Never prints a token.
 */
export async function checkSlack(input: SlackCheckInput): Promise<DoctorRow[]> {
  // the SDK's own console lines ("[WARN] web-api:WebClient …") would print around the table: the rows say it
  const options = {
    slackApiUrl: input.apiUrl,
    timeout: input.timeoutMs,
    retryConfig: { retries: 0 },
    logger: SILENT_SLACK_LOGGER,
  };
  const client = new WebClient(input.botToken, options);
  const rows: DoctorRow[] = [];
  let auth: Awaited<ReturnType<WebClient["auth"]["test"]>>;
  try {
    auth = await client.auth.test();
  } catch (error) {
    const said = slackErrorWord(error);
    if (said !== undefined && TOKEN_ERRORS.has(said)) {
      rows.push(
        problem(
          "fail",
          TARGET,
          "bot token",
          `auth.test refused SLACK_BOT_TOKEN: ${said}`,
          "SLACK_TOKEN_INVALID",
          "copy the Bot User OAuth Token (xoxb-…) from the app's OAuth & Permissions page into SLACK_BOT_TOKEN; if the app was uninstalled or the token revoked, reinstall the app to get a new one",
        ),
      );
    } else {
      rows.push(
        problem(
          "fail",
          TARGET,
          "bot token",
          `auth.test could not be asked: ${said ?? errorText(error)}`,
          "SLACK_UNREACHABLE",
          `check that this machine reaches Slack's Web API (${input.apiUrl}) over HTTPS, and Slack's status page`,
        ),
      );
    }
    return [...rows, ...(await checkAppToken(input, options))];
  }
  rows.push(
    pass(
      TARGET,
      "bot token",
      `team ${auth.team ?? "?"} (${auth.team_id ?? "?"}), bot user ${auth.user ?? "?"} (${auth.user_id ?? "?"})`,
    ),
  );
  const wanted = manifestBotScopes();
  const granted = auth.response_metadata?.scopes;
  if (granted === undefined) {
    rows.push(
      problem(
        "warn",
        TARGET,
        "scopes",
        "Slack's answer did not list the token's scopes (no x-oauth-scopes header)",
        "SLACK_SCOPES_UNKNOWN",
        "compare the app's OAuth & Permissions scopes with manifest.yml by hand",
      ),
    );
  } else {
    const missing = wanted.filter((s) => !granted.includes(s));
    if (missing.length === 0) {
      rows.push(pass(TARGET, "scopes", `all ${wanted.length} scopes manifest.yml asks for are granted`));
    } else {
      rows.push(
        problem(
          "fail",
          TARGET,
          "scopes",
          `missing ${missing.join(", ")} (granted ${wanted.length - missing.length} of the ${wanted.length} manifest.yml asks for)`,
          "SLACK_SCOPES_MISSING",
          "add the missing scopes to the app (App Manifest: paste manifest.yml; or OAuth & Permissions → Bot Token Scopes), then reinstall it (Install App → Reinstall to Workspace)",
        ),
      );
    }
  }
  rows.push(...(await checkAppToken(input, options)));
  if (granted === undefined || granted.includes("channels:history") || granted.includes("groups:history"))
    rows.push(await checkChannel(client, input.channel));
  return rows;
}

async function checkAppToken(
  input: SlackCheckInput,
  options: ConstructorParameters<typeof WebClient>[1],
): Promise<DoctorRow[]> {
  if (input.appToken === undefined)
    return [
      pass(TARGET, "socket mode", "not used: no SLACK_APP_TOKEN, so HTTP mode (Slack calls the Request URL)"),
    ];
  try {
    await new WebClient(input.appToken, options).apps.connections.open();
    return [pass(TARGET, "socket mode", "apps.connections.open gave a WebSocket URL (not opened)")];
  } catch (error) {
    const said = slackErrorWord(error);
    // Slack's refusal of the token is the token's; no answer at all is the network's
    if (said === undefined)
      return [
        problem(
          "fail",
          TARGET,
          "socket mode",
          `apps.connections.open could not be asked: ${errorText(error)}`,
          "SLACK_UNREACHABLE",
          `check that this machine reaches Slack's Web API (${input.apiUrl}) over HTTPS, and Slack's status page`,
        ),
      ];
    return [
      problem(
        "fail",
        TARGET,
        "socket mode",
        `apps.connections.open refused SLACK_APP_TOKEN: ${said}`,
        "SLACK_APP_TOKEN_INVALID",
        APP_TOKEN_FIX,
      ),
    ];
  }
}

async function checkChannel(client: WebClient, channel: string): Promise<DoctorRow> {
  try {
    await client.conversations.history({ channel, limit: 1 });
    return pass(TARGET, "channel", `${channel} can be read (conversations.history)`);
  } catch (error) {
    const said = slackErrorWord(error) ?? errorText(error);
    const fix =
      said === "not_in_channel"
        ? `invite the bot in that channel: /invite @modelswap`
        : "set slack.channel to the channel's id (C…, at the bottom of the channel's details) and invite the bot there (/invite @modelswap; a private channel is invisible to the bot until then)";
    return problem(
      "fail",
      TARGET,
      "channel",
      `slack.channel ${channel}: ${said}`,
      "SLACK_CHANNEL_UNREACHABLE",
      fix,
    );
  }
}

/** An error as a row says it: the network's own words when the call got no answer. */
function errorText(error: unknown): string {
  return networkReason(error) ?? (error instanceof Error ? error.message : String(error));
}
