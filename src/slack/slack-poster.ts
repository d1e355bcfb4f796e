import type { WebClient } from "@slack/web-api";
import type { Logger } from "../log.ts";
import { redactStrings } from "../log.ts";
import type { SlackMessage } from "./blocks.ts";
import { Pacer } from "./pacer.ts";
import type { FoundMessage, PostOptions, UploadFile, UploadOptions } from "./post-types.ts";
import { HURRIED_MS, LIMITS, SlackApiError } from "./slack-api-error.ts";
import { slackErrorWord } from "./slack-error-word.ts";

/**
 * Every Web API call the bot makes to say something goes through here: one place that redacts secrets before they can
 * leave, and turns Slack's error strings into fix-it messages. Rate limits (429 + Retry-After) are
 * honoured by the WebClient's retry policy.
 */
export class SlackPoster {
  private readonly pacers = new Map<string, Pacer>();
  /** Tags hurried (see hurry), until when. */
  private readonly hurried = new Map<string, number>();

  constructor(
    private readonly client: WebClient,
    private readonly secrets: readonly string[],
    private readonly log: Logger,
    /** bench.slackRateScale: a simulated workspace allowing this many times Slack's limits (1 in production). */
    private readonly rateScale = 1,
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
    const metadata = options.metadata === undefined ? {} : { metadata: options.metadata };
    const result = await this.postTurn(channel, options, () =>
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
    options: { urgent?: boolean; tag?: string } = {},
  ): Promise<void> {
    const clean = this.redact(msg);
    await this.pace("chat.update", LIMITS.tier3, this.urgent(options), options.tag);
    await this.call("chat.update", () =>
      this.client.chat.update({ channel, ts, text: clean.text, blocks: clean.blocks }),
    );
  }

  /** A message's permalink (chat.getPermalink: Slack's "special" tier, not the channel's post pace). */
  async permalink(channel: string, ts: string): Promise<string> {
    const result = await this.call("chat.getPermalink", () =>
      this.client.chat.getPermalink({ channel, message_ts: ts }),
    );
    return String((result as { permalink?: string }).permalink ?? "");
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
    await this.pace("files.getUploadURLExternal", LIMITS.tier4, this.urgent(options), options.tag);
    await this.pace("files.completeUploadExternal", LIMITS.tier4, this.urgent(options), options.tag);
    const base = {
      channel_id: channel,
      file: file.bytes,
      filename: words.filename,
      title: words.title,
      ...(words.altText === "" ? {} : { alt_text: words.altText }),
      ...(words.comment === "" ? {} : { initial_comment: words.comment }),
    };
    // the completed upload posts a message in the channel: it takes its turn with the other posts there
    const result = await this.postTurn(channel, options, () =>
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

  /** Card edits (chat.update) waiting for their turn now (this process's): Slack takes about 50 a minute. */
  updateBacklog(): number {
    return this.pacers.get("chat.update")?.backlog ?? 0;
  }

  /** Reactions taken back (reactions.remove, Tier 2) waiting for their turn now (this process's). */
  unreactBacklog(): number {
    return this.pacers.get("reactions.remove")?.backlog ?? 0;
  }

  /** Posts waiting for their turn in a channel now (this process's): about one leaves a second. */
  postBacklog(channel: string): number {
    return this.pacers.get(`post:${channel}`)?.backlog ?? 0;
  }

  /**
   * A post in `channel`, at its turn: about one a second (Slack's per-channel allowance), urgent ones
   * first, and one at a time. The next leaves only once the previous was answered: with many calls in
   * flight (25 swaps' reporters) some were held up on their way (sockets, a busy event loop) and reached
   * Slack bunched, over its allowance (11 × 429 in the bench once). Turns given out before the call could
   * leave (a turn, then a wait for the previous answer) bunched them too: 4–6 × 429 in some 25-swap runs.
   */
  private async postTurn<T>(
    channel: string,
    options: { urgent?: boolean; tag?: string },
    call: () => Promise<T>,
  ): Promise<T> {
    const pacer = this.pacer(`post:${channel}`, LIMITS.postMessagePerChannel, 1);
    return await pacer.run(call, this.urgent(options), options.tag);
  }

  private async pace(
    key: string,
    limits: readonly [number, number],
    urgent = false,
    tag?: string,
  ): Promise<void> {
    await this.pacer(key, limits).take(urgent, tag);
  }

  /**
   * From now on (for ten minutes) the calls tagged `tag` are urgent, those already waiting too: a swap
   * that has ended while its reporter's post waited behind other swaps' urgent ones (that reporter holds
   * the swap, so the outcome waits for it).
   */
  hurry(tag: string): void {
    const now = Date.now();
    for (const [t, until] of this.hurried) if (until < now) this.hurried.delete(t);
    this.hurried.set(tag, now + HURRIED_MS);
    for (const pacer of this.pacers.values()) pacer.hurry(tag);
  }

  private urgent(options: { urgent?: boolean; tag?: string }): boolean {
    if (options.urgent === true) return true;
    return options.tag !== undefined && (this.hurried.get(options.tag) ?? 0) >= Date.now();
  }

  /** The pacer of `key`, made on first use with its limits (and how many calls may be in flight). */
  private pacer(key: string, [perSecond, burst]: readonly [number, number], maxInFlight?: number): Pacer {
    let pacer = this.pacers.get(key);
    if (pacer === undefined) {
      pacer = new Pacer(perSecond * this.rateScale, burst, maxInFlight);
      this.pacers.set(key, pacer);
    }
    return pacer;
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
