import { actionIds, findElement, isObject, plainText } from "./block-elements.ts";
import { type BotDeliveries, forgery } from "./deliveries.ts";
import type { EmulatorState } from "./emulator-state.ts";
import { blockActionsPayload, newTriggerId } from "./payloads.ts";
import { firstLine } from "./render-conversation.ts";
import type { ActionResult, EventResult, JsonObject, SlackMessage } from "./types.ts";
import type { ChannelState } from "./workspace.ts";

/**
 * What people do in the emulated workspace, delivered to the bot as Slack would: reactions
 * (`reaction_added` / `reaction_removed`), button clicks (`block_actions` with a fresh response_url)
 * and messages (`message`, plus `app_mention` when the bot is mentioned).
 */
export class UserActions {
  constructor(
    private readonly s: EmulatorState,
    private readonly d: BotDeliveries,
  ) {}

  private messageOrThrow(channel: ChannelState, ts: string): SlackMessage {
    const message = this.s.workspace.findLiveMessage(channel.id, ts);
    if (message === undefined) throw new Error(`SlackEmulator: no message ${ts} in ${channel.id}`);
    return message;
  }

  /** A user adds a reaction: recorded on the message, and `reaction_added` is sent to the bot. */
  async react(userId: string, channel: string, ts: string, name: string): Promise<EventResult> {
    const ch = this.d.channelOrThrow(channel);
    const message = this.messageOrThrow(ch, ts);
    if (this.s.workspace.addReaction(message, userId, name) === "already_reacted") {
      throw new Error(`SlackEmulator: ${userId} already reacted :${name}: to ${ts}`);
    }
    this.s.workspace.recordAction({
      kind: "reaction",
      channel: ch.id,
      user: userId,
      text: name,
      messageTs: ts,
    });
    return this.d.event({
      type: "reaction_added",
      user: userId,
      reaction: name,
      item_user: message.user,
      item: { type: "message", channel: ch.id, ts },
    });
  }

  /** A user removes a reaction: `reaction_removed` is sent to the bot. */
  async unreact(userId: string, channel: string, ts: string, name: string): Promise<EventResult> {
    const ch = this.d.channelOrThrow(channel);
    const message = this.messageOrThrow(ch, ts);
    if (this.s.workspace.removeReaction(message, userId, name) === "no_reaction") {
      throw new Error(`SlackEmulator: ${userId} has no :${name}: on ${ts}`);
    }
    this.s.workspace.recordAction({
      kind: "unreaction",
      channel: ch.id,
      user: userId,
      text: name,
      messageTs: ts,
    });
    return this.d.event({
      type: "reaction_removed",
      user: userId,
      reaction: name,
      item_user: message.user,
      item: { type: "message", channel: ch.id, ts },
    });
  }

  /**
   * A user clicks a button (by action_id) on a message (or on an ephemeral message shown to them): a
   * `block_actions` payload with the real message and a fresh response_url. Throws when the message has
   * no such element, because a user could not click it either. `signWith`/`timestamp` forge or replay it
   * (Bolt answers 401); such a click did not come from Slack, so no user action is recorded.
   */
  async clickButton(
    userId: string,
    channel: string,
    ts: string,
    actionId: string,
    value?: string,
    opts: { signWith?: string; timestamp?: number } = {},
  ): Promise<ActionResult> {
    const ch = this.d.channelOrThrow(channel);
    const ws = this.s.workspace;
    const message = ws.findLiveMessage(ch.id, ts);
    const ephemeral =
      message === undefined
        ? ws.ephemerals.find((e) => e.channel === ch.id && e.ts === ts && e.user === userId)
        : undefined;
    if (message === undefined && ephemeral === undefined) {
      throw new Error(`SlackEmulator: no message ${ts} in ${ch.id} visible to ${userId}`);
    }
    const blocks = message?.blocks ?? ephemeral?.blocks;
    const found = findElement(blocks, actionId);
    if (found === undefined) {
      throw new Error(
        `SlackEmulator: message ${ts} has no element with action_id "${actionId}" (has: ${actionIds(blocks).join(", ") || "none"})`,
      );
    }
    const { block, element } = found;
    const action: JsonObject = {
      action_id: actionId,
      block_id: typeof block.block_id === "string" ? block.block_id : "",
      type: element.type,
      action_ts: (Date.now() / 1000).toFixed(6),
    };
    if (element.type === "button") {
      action.text = element.text;
      action.value = value ?? element.value;
      if (element.style !== undefined) action.style = element.style;
    } else if (Array.isArray(element.options)) {
      const option = (element.options as unknown[]).find((o) => isObject(o) && o.value === value);
      action.selected_option = option ?? { text: { type: "plain_text", text: value ?? "" }, value };
    } else if (value !== undefined) {
      action.value = value;
    }
    const responseUrl = this.d.newResponseUrl({
      kind: "block_actions",
      channel: ch.id,
      user: userId,
      messageTs: ts,
      ...(ephemeral !== undefined ? { ephemeral } : {}),
    });
    const triggerId = newTriggerId();
    const threadTs = message?.thread_ts ?? ephemeral?.thread_ts;
    const payload = blockActionsPayload(ws, {
      user: userId,
      channel: ch,
      messageTs: ts,
      ...(threadTs !== undefined ? { threadTs } : {}),
      isEphemeral: ephemeral !== undefined,
      ...(message !== undefined ? { message: ws.messageJson(message) } : {}),
      action,
      responseUrl,
      triggerId,
    });
    const label = plainText(element.text) || actionId;
    const snippet = firstLine(message ?? ephemeral ?? { text: "" }, ws);
    if (opts.signWith === undefined && opts.timestamp === undefined) {
      ws.recordAction({
        kind: "click",
        channel: ch.id,
        user: userId,
        text: label,
        messageTs: ts,
        ...(snippet !== undefined ? { messageSnippet: snippet } : {}),
      });
    }
    const result = await this.d.send({
      http: {
        body: new URLSearchParams({ payload: JSON.stringify(payload) }).toString(),
        contentType: "application/x-www-form-urlencoded",
      },
      socket: { type: "interactive", payload, acceptsResponsePayload: true },
      ...forgery(opts),
    });
    return { ...result, responseUrl, triggerId, responses: this.d.responsesFor(responseUrl) };
  }

  /**
   * A user writes in a channel (or thread): recorded, then the `message` event is delivered, and
   * `app_mention` too when the text mentions the bot (`<@BOTID>`), as Slack does for subscribed apps.
   */
  async userMessage(
    userId: string,
    channel: string,
    text: string,
    opts: { threadTs?: string } = {},
  ): Promise<{ message: SlackMessage; results: EventResult[] }> {
    const ch = this.d.channelOrThrow(channel);
    const message = this.s.workspace.post({
      channel: ch.id,
      user: userId,
      text,
      ...(opts.threadTs !== undefined ? { thread_ts: opts.threadTs } : {}),
      source: "user",
      fromBot: false,
    });
    const base: JsonObject = {
      user: userId,
      text,
      ts: message.ts,
      channel: ch.id,
      team: this.s.workspace.teamId,
      ...(opts.threadTs !== undefined ? { thread_ts: opts.threadTs } : {}),
    };
    const channelType = ch.isIm ? "im" : ch.isPrivate ? "group" : "channel";
    const results = [await this.d.event({ type: "message", ...base, channel_type: channelType })];
    if (text.includes(`<@${this.s.workspace.botUserId}>`)) {
      results.push(await this.d.event({ type: "app_mention", ...base }));
    }
    return { message, results };
  }
}
