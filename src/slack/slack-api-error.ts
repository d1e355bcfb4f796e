import { ErrorCode } from "@slack/web-api";
import { CodedError } from "../errors.ts";

/* Slack's refusals as coded errors, each with the fix Slack's error name calls for. */

/** Slack refused a call, or could not be reached: which method, and Slack's error word (or the network's message). */
export class SlackApiError extends CodedError {
  constructor(
    readonly method: string,
    readonly slackError: string,
    cause: unknown,
  ) {
    super("SLACK_API_ERROR", `Slack refused ${method}: ${slackError}`, slackFix(slackError), { cause });
    this.name = "SlackApiError";
  }

  /**
   * Slack answered and said no (`ok: false`): the call did nothing. Otherwise (a timeout, a 5xx, a lost
   * connection) it may have been done without the bot hearing so.
   */
  get refused(): boolean {
    return (
      (this.cause as { code?: unknown } | undefined)?.code === ErrorCode.PlatformError ||
      this.cause === undefined
    );
  }

  /** The message this call was about is gone (deleted, or never there). */
  get messageGone(): boolean {
    return this.slackError === "message_not_found" || this.slackError === "thread_not_found";
  }

  /** The request itself is wrong (a bug in what the bot sends): sending it again cannot help. */
  get badRequest(): boolean {
    return BAD_REQUEST.has(this.slackError);
  }
}

const BAD_REQUEST = new Set([
  "invalid_blocks",
  "invalid_blocks_format",
  "msg_too_long",
  "no_text",
  "invalid_arguments",
  "too_many_attachments",
  "invalid_metadata_format",
]);

export function isSlackApiError(error: unknown): error is SlackApiError {
  return error instanceof SlackApiError;
}

/**
 * Slack's rate limits (docs: "Rate limits"): chat.postMessage about one message per second per channel
 * (short bursts tolerated), Tier 2 methods (reactions.remove) 20 a minute, Tier 3 methods 50 a minute, Tier 4
 * 100 a minute, per workspace. Kept as
 * [calls per second, burst].
 */
/** How long a hurried tag stays urgent: longer than any swap's remaining thread takes to post. */
export const HURRIED_MS = 10 * 60_000;

export const LIMITS = {
  postMessagePerChannel: [1, 2],
  tier2: [20 / 60, 3],
  tier3: [50 / 60, 5],
  tier4: [100 / 60, 10],
} as const;

function slackFix(error: string): string {
  switch (error) {
    case "not_in_channel":
    case "channel_not_found":
      return "invite the bot to the channel (/invite @modelswap) and check slack.channel in the config";
    case "invalid_auth":
    case "not_authed":
    case "token_revoked":
      return "SLACK_BOT_TOKEN is wrong or revoked: copy the Bot User OAuth Token again";
    case "missing_scope":
      return "add the missing scope to the Slack app (see manifest.yml) and reinstall it";
    default:
      return "check the bot's log for details";
  }
}
