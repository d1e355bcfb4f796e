import { ErrorCode, type WebClient } from "@slack/web-api";
import { CodedError } from "../errors.ts";
import { Semaphore } from "../host/semaphore.ts";
import type { Logger } from "../log.ts";
import { redactStrings } from "../log.ts";
import type { SlackMessage } from "../reporter/message.ts";
import { Pacer } from "./pacer.ts";
import { slackErrorWord } from "./slack-error-word.ts";

export interface PostOptions {
  threadTs?: string;
  /** Also show a thread reply in the channel (used for a swap's final outcome only). */
  broadcast?: boolean;
  /** Slack's message metadata: finds the message again later (a post whose answer was lost). */
  metadata?: PostMetadata;
  /** Ahead of every call that is not (a plan to approve, an ended swap's outcome): see Pacer. */
  urgent?: boolean;
}

/** What modelswap marks its reports with (https://docs.slack.dev/messaging/message-metadata). */
export interface PostMetadata {
  event_type: string;
  event_payload: Record<string, string | number | boolean>;
}

/** A message as conversations.history and conversations.replies give it back: its ts and metadata. */
export interface FoundMessage {
  ts: string;
  metadata?: { event_type?: string; event_payload?: Record<string, unknown> };
}

export interface UploadFile {
  bytes: Buffer;
  filename: string;
  /** Shown above the file in Slack. */
  title: string;
  /** For screen readers (Slack takes up to 1000 characters). */
  altText?: string;
}

export interface UploadOptions {
  /** Upload into this thread. */
  threadTs?: string;
  /** The message the file is shared with. */
  comment?: string;
  urgent?: boolean;
}

/**
 * Every Web API call the bot makes to say something goes through here: one place that redacts secrets before they can
 * leave, and turns Slack's error strings into fix-it messages. Rate limits (429 + Retry-After) are
 * honoured by the WebClient's retry policy.
 */
export class SlackPoster {
  private readonly pacers = new Map<string, Pacer>();
  private readonly lanes = new Map<string, Semaphore>();

  constructor(
    private readonly client: WebClient,
    private readonly secrets: readonly string[],
    private readonly log: Logger,
  ) {}

  async post(channel: string, msg: SlackMessage, options: PostOptions = {}): Promise<string> {
    const clean = this.redact(msg);
    const base = {
      channel,
      text: clean.text,
      blocks: clean.blocks,
      unfurl_links: false,
      unfurl_media: false,
    };
    await this.pace(`post:${channel}`, LIMITS.postMessagePerChannel, options.urgent);
    const metadata = options.metadata === undefined ? {} : { metadata: options.metadata };
    const result = await this.oneAtATime(channel, () =>
      this.call("chat.postMessage", () =>
        options.threadTs === undefined
          ? this.client.chat.postMessage({ ...base, ...metadata })
          : this.client.chat.postMessage({
              ...base,
              ...metadata,
              thread_ts: options.threadTs,
              reply_broadcast: options.broadcast === true,
            }),
      ),
    );
    const ts = String(result.ts);
    const threaded = (result as { message?: { thread_ts?: string } }).message?.thread_ts;
    if (options.threadTs !== undefined && threaded === undefined && result.message !== undefined) {
      // Slack posts a reply to a parent that is gone (deleted, nothing left of it) as a channel message
      // (slack-go/slack#1571): take the stray message back, and say the thread is gone
      await this.client.chat.delete({ channel, ts }).catch(() => undefined);
      throw new SlackApiError("chat.postMessage", "thread_not_found", undefined);
    }
    return ts;
  }

  /**
   * The messages of a channel since `oldest` (a Slack ts), newest first, or of one thread, with their
   * metadata, in pages, at most `max` of them (conversations.history / conversations.replies; both need
   * the channels:history scope, groups:history for a private channel).
   */
  async read(
    channel: string,
    where: { threadTs?: string; oldest?: string },
    max = 1000,
  ): Promise<FoundMessage[]> {
    const found: FoundMessage[] = [];
    let cursor: string | undefined;
    do {
      const method = where.threadTs === undefined ? "conversations.history" : "conversations.replies";
      await this.pace(method, LIMITS.tier3);
      const page = (await this.call(method, () =>
        where.threadTs === undefined
          ? this.client.conversations.history({
              channel,
              include_all_metadata: true,
              limit: 200,
              ...(where.oldest === undefined ? {} : { oldest: where.oldest }),
              ...(cursor === undefined ? {} : { cursor }),
            })
          : this.client.conversations.replies({
              channel,
              ts: where.threadTs,
              include_all_metadata: true,
              limit: 200,
              ...(cursor === undefined ? {} : { cursor }),
            }),
      )) as { messages?: FoundMessage[]; response_metadata?: { next_cursor?: string } };
      found.push(...(page.messages ?? []));
      cursor = page.response_metadata?.next_cursor || undefined;
    } while (cursor !== undefined && found.length < max);
    return found;
  }

  async update(
    channel: string,
    ts: string,
    msg: SlackMessage,
    options: { urgent?: boolean } = {},
  ): Promise<void> {
    const clean = this.redact(msg);
    await this.pace("chat.update", LIMITS.tier3, options.urgent);
    await this.call("chat.update", () =>
      this.client.chat.update({ channel, ts, text: clean.text, blocks: clean.blocks }),
    );
  }

  async ephemeral(channel: string, user: string, msg: SlackMessage): Promise<void> {
    const clean = this.redact(msg);
    await this.pace("chat.postEphemeral", LIMITS.tier4);
    await this.call("chat.postEphemeral", () =>
      this.client.chat.postEphemeral({ channel, user, text: clean.text, blocks: clean.blocks }),
    );
  }

  /**
   * Uploads a file into a channel (a thread, with threadTs) through Slack's upload flow, which
   * `files.uploadV2` runs: files.getUploadURLExternal → POST the bytes to the upload URL →
   * files.completeUploadExternal with the channel, thread and comment. The title, comment and alt text
   * are redacted like messages (the bytes are ours: a chart drawn from numbers and model names).
   * Returns the file's id.
   */
  async upload(channel: string, file: UploadFile, options: UploadOptions = {}): Promise<string> {
    const words = this.redactStrings({
      filename: file.filename,
      title: file.title,
      altText: file.altText ?? "",
      comment: options.comment ?? "",
    });
    await this.pace("files.getUploadURLExternal", LIMITS.tier4, options.urgent);
    await this.pace("files.completeUploadExternal", LIMITS.tier4, options.urgent);
    // the completed upload posts a message in the channel: it takes its turn with the other posts there
    await this.pace(`post:${channel}`, LIMITS.postMessagePerChannel, options.urgent);
    const base = {
      channel_id: channel,
      file: file.bytes,
      filename: words.filename,
      title: words.title,
      ...(words.altText === "" ? {} : { alt_text: words.altText }),
      ...(words.comment === "" ? {} : { initial_comment: words.comment }),
    };
    const result = await this.oneAtATime(channel, () =>
      this.call("files.uploadV2", () =>
        this.client.files.uploadV2(
          options.threadTs === undefined ? base : { ...base, thread_ts: options.threadTs },
        ),
      ),
    );
    const completed = (result as { files?: { files?: { id?: string }[] }[] }).files ?? [];
    return completed[0]?.files?.[0]?.id ?? "";
  }

  /** Adds the bot's own reaction (so people can click it); an existing one is fine. */
  async react(channel: string, ts: string, name: string, urgent = false): Promise<void> {
    await this.pace("reactions.add", LIMITS.tier3, urgent);
    try {
      await this.client.reactions.add({ channel, timestamp: ts, name });
    } catch (error) {
      const slackError = slackErrorWord(error);
      if (slackError !== "already_reacted") this.log.warn({ slackError, name }, "could not add a reaction");
    }
  }

  /** Takes the bot's own reaction back; one already gone (or a message deleted) is fine. */
  async unreact(channel: string, ts: string, name: string, urgent = false): Promise<void> {
    await this.pace("reactions.remove", LIMITS.tier2, urgent);
    try {
      await this.client.reactions.remove({ channel, timestamp: ts, name });
    } catch (error) {
      const slackError = slackErrorWord(error);
      if (slackError !== "no_reaction" && slackError !== "message_not_found")
        this.log.warn({ slackError, name }, "could not remove a reaction");
    }
  }

  /**
   * One post at a time per channel. The pacer spaces the calls as they leave; with many calls in flight
   * (25 swaps' reporters) some are held up on their way (sockets, a busy event loop) and reach Slack
   * bunched, over its per-channel allowance: the bench's 25 swaps got 11 × 429 so. Waiting for the
   * previous post's answer keeps them spaced where Slack counts them.
   */
  private async oneAtATime<T>(channel: string, call: () => Promise<T>): Promise<T> {
    let lane = this.lanes.get(channel);
    if (lane === undefined) {
      lane = new Semaphore(1);
      this.lanes.set(channel, lane);
    }
    return await lane.run(call);
  }

  private async pace(
    key: string,
    [perSecond, burst]: readonly [number, number],
    urgent = false,
  ): Promise<void> {
    let pacer = this.pacers.get(key);
    if (pacer === undefined) {
      pacer = new Pacer(perSecond, burst);
      this.pacers.set(key, pacer);
    }
    await pacer.take(urgent);
  }

  private redactStrings<T extends Record<string, string>>(strings: T): T {
    return redactStrings(strings, this.secrets);
  }

  /**
   * Redacts secrets from a message (text and blocks alike): each string as it will be sent, before JSON
   * encodes it, with each secret also as mrkdwn escaped it (src/log.ts, secretVariants).
   */
  redact(msg: SlackMessage): SlackMessage {
    return redactStrings(msg, this.secrets);
  }

  private async call<T>(method: string, send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (error) {
      const slackError = slackErrorWord(error) ?? (error as Error).message;
      this.log.warn({ method, slackError }, "slack call failed");
      throw new SlackApiError(method, slackError, error);
    }
  }
}

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
const LIMITS = {
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
