/**
 * Slack's error word of a refused Web API call (`invalid_auth`, `channel_not_found`): @slack/web-api's
 * platform errors carry Slack's answer as `data`, whose `error` is that word. Undefined for anything
 * else (a network failure, an HTTP error, a non-error).
 */
export function slackErrorWord(error: unknown): string | undefined {
  const word = (error as { data?: { error?: unknown } } | undefined)?.data?.error;
  return typeof word === "string" ? word : undefined;
}

/** What to do when Slack refuses the app-level token (Socket Mode): said at start and by the doctor. */
export const APP_TOKEN_FIX =
  "create an app-level token with the connections:write scope (app settings → Basic Information → App-Level Tokens), turn Socket Mode on, and set it as SLACK_APP_TOKEN";
