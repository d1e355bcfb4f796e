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

/**
 * Why a Web API call got no answer at all, in the network's words: @slack/web-api wraps fetch's failure
 * ("A request error occurred: fetch failed") around the real one (`original.cause`: connect ECONNREFUSED
 * 10.0.0.1:443, getaddrinfo ENOTFOUND slack.com, a timeout). Undefined when the call was answered.
 */
export function networkReason(error: unknown): string | undefined {
  const original = (error as { original?: unknown } | undefined)?.original;
  if (original === undefined) return undefined;
  let deepest: unknown = original;
  for (let i = 0; i < 5; i++) {
    const next = (deepest as { cause?: unknown } | undefined)?.cause;
    if (next === undefined || next === null) break;
    deepest = next;
  }
  const message = (deepest as { message?: unknown } | undefined)?.message;
  const code = (deepest as { code?: unknown } | undefined)?.code;
  if (typeof message === "string" && message !== "") return message;
  return typeof code === "string" ? code : String(deepest);
}

/** A logger for @slack/web-api clients that prints nothing: the caller says what went wrong, in its words. */
export const SILENT_SLACK_LOGGER = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  setLevel: () => undefined,
  getLevel: () => "error" as never,
  setName: () => undefined,
};
