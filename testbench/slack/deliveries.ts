import { randomBytes } from "node:crypto";
import { isObject } from "./block-elements.ts";
import { deliver } from "./deliver.ts";
import type { EmulatorState } from "./emulator-state.ts";
import { eventEnvelope, newEventId, newResponseId, newTriggerId, slashCommandBody } from "./payloads.ts";
import { type EnvelopeInput, SocketModeLink } from "./socket-mode.ts";
import type {
  AckResponse,
  Block,
  CommandResult,
  DeliveryResult,
  EventResult,
  JsonObject,
  ResponseUrlPost,
} from "./types.ts";
import type { ChannelState, ResponseUrlState } from "./workspace.ts";

/**
 * The emulator as Slack towards the bot: where deliveries go (the bot's Request URL, or the Socket Mode
 * connections it opened), and the deliveries themselves — slash commands with their ack shown to the
 * user as Slack shows it, Events API events with Slack's retries, and the url_verification check. Clicks,
 * reactions and messages by users are in user-actions.ts.
 */

export interface CommandOptions {
  /** Default "/llm". */
  command?: string;
  /** Channel id or "#name"; default the first configured channel, else "C0LLMOPS01". */
  channel?: string;
  /** Sign with this secret instead of the real one (a forged request). */
  signWith?: string;
  /** x-slack-request-timestamp in unix seconds (e.g. 10 minutes ago: stale). */
  timestamp?: number;
}

/** How the emulator reaches the bot: its Request URL (HTTP) or the connections it opened (Socket Mode). */
export type Transport = "http" | "socket";

/** One delivery to the bot, in both shapes; the transport in use picks one. */
interface Delivery {
  http: {
    body: string;
    contentType: "application/x-www-form-urlencoded" | "application/json";
    headers?: Record<string, string>;
  };
  socket: EnvelopeInput;
  signWith?: string;
  timestamp?: number;
}

export interface EventOptions {
  /** Reuse an event id to imitate Slack's retry of the same delivery. */
  eventId?: string;
  /** Sets X-Slack-Retry-Num (1..3 on slack.com); over Socket Mode, the envelope's `retry_attempt`. */
  retryNum?: number;
  /**
   * Sets X-Slack-Retry-Reason, e.g. "http_timeout", "http_error" (default "http_timeout" with retryNum);
   * over Socket Mode, the envelope's `retry_reason` (default "timeout").
   */
  retryReason?: string;
  signWith?: string;
  timestamp?: number;
}

export class BotDeliveries {
  private botEndpoint: string | undefined;
  private mode: Transport = "http";

  constructor(private readonly s: EmulatorState) {}

  /** The bot's Request URL, e.g. http://127.0.0.1:3000/slack/events. Deliveries go there (HTTP) from now on. */
  setBotEndpoint(url: string): void {
    this.botEndpoint = url;
    this.mode = "http";
  }

  /**
   * Socket Mode: `apps.connections.open` accepts `appToken` (an app-level `xapp-…` token) and answers a
   * WebSocket URL on this emulator; commands, events and clicks go over the connections the bot opened
   * from now on, as envelopes it must ack. `setBotEndpoint()` switches back to HTTP.
   */
  useSocketMode(appToken: string): void {
    this.s.ctx.appTokens.clear();
    this.s.ctx.appTokens.add(appToken);
    if (this.s.socketLink === undefined) {
      const link = new SocketModeLink({
        appId: this.s.workspace.appId,
        origin: this.s.url.replace(/^http/, "ws"),
        pingIntervalMs: this.s.opts.socketPingIntervalMs ?? 10_000,
      });
      this.s.socketLink = link;
      this.s.ctx.openSocket = () => link.issueUrl();
    }
    this.mode = "socket";
  }

  /** Where deliveries go now. */
  get transport(): Transport {
    return this.mode;
  }

  /** The Socket Mode link; throws before useSocketMode(). */
  link(): SocketModeLink {
    if (this.s.socketLink === undefined) throw new Error("SlackEmulator: call useSocketMode(appToken) first");
    return this.s.socketLink;
  }

  /** One delivery over the transport in use: a signed POST, or an envelope waiting for its ack. */
  async send(delivery: Delivery): Promise<DeliveryResult> {
    if (this.mode === "socket") {
      if (delivery.signWith !== undefined || delivery.timestamp !== undefined) {
        throw new Error(
          "SlackEmulator: signWith/timestamp forge an HTTP request; Socket Mode deliveries are not signed",
        );
      }
      return await this.link().deliver(delivery.socket, this.s.ackDeadlineMs);
    }
    return await deliver({
      endpoint: this.endpoint(),
      body: delivery.http.body,
      contentType: delivery.http.contentType,
      signingSecret: delivery.signWith ?? this.s.opts.signingSecret,
      deadlineMs: this.s.ackDeadlineMs,
      ...(delivery.http.headers !== undefined ? { headers: delivery.http.headers } : {}),
      ...(delivery.timestamp !== undefined ? { timestamp: delivery.timestamp } : {}),
    });
  }

  private endpoint(): string {
    if (this.botEndpoint === undefined) throw new Error("SlackEmulator: call setBotEndpoint(url) first");
    return this.botEndpoint;
  }

  defaultChannel(): ChannelState {
    const first = this.s.opts.channels?.[0];
    const channel = this.s.workspace.resolveChannel(first?.id ?? "C0LLMOPS01");
    if (channel === undefined) throw new Error("SlackEmulator: no default channel");
    return channel;
  }

  channelOrThrow(ref: string): ChannelState {
    const channel = this.s.workspace.resolveChannel(ref);
    if (channel === undefined) throw new Error(`SlackEmulator: unknown channel ${ref}`);
    return channel;
  }

  newResponseUrl(state: Omit<ResponseUrlState, "id" | "uses" | "createdAt">): string {
    const id = newResponseId(this.s.workspace.teamId);
    this.s.workspace.responseUrls.set(id, { ...state, id, uses: 0, createdAt: Date.now() });
    return `${this.s.url}/response/${id}`;
  }

  responsesFor(responseUrl: string): () => ResponseUrlPost[] {
    const id = responseUrl.slice(`${this.s.url}/response/`.length);
    return () => this.s.responsePosts.filter((p) => p.id === id);
  }

  /** A user types `/llm <text>`: a correctly signed, form-encoded slash command with response_url and trigger_id. */
  async command(userId: string, text: string, opts: CommandOptions = {}): Promise<CommandResult> {
    const channel = opts.channel !== undefined ? this.channelOrThrow(opts.channel) : this.defaultChannel();
    const command = opts.command ?? "/llm";
    const triggerId = newTriggerId();
    const responseUrl = this.newResponseUrl({ kind: "command", channel: channel.id, user: userId });
    const body = slashCommandBody(this.s.workspace, {
      user: userId,
      channel,
      command,
      text,
      responseUrl,
      triggerId,
    });
    // A forged or replayed request does not come from Slack: no user typed it and Slack shows nothing.
    const forged = opts.signWith !== undefined || opts.timestamp !== undefined;
    if (!forged) {
      this.s.workspace.recordAction({
        kind: "command",
        channel: channel.id,
        user: userId,
        text: `${command} ${text}`.trim(),
      });
    }
    const result = await this.send({
      http: { body, contentType: "application/x-www-form-urlencoded" },
      // the same fields, as a JSON object of strings
      socket: {
        type: "slash_commands",
        payload: Object.fromEntries(new URLSearchParams(body)),
        acceptsResponsePayload: true,
      },
      ...forgery(opts),
    });
    const out: CommandResult = {
      ...result,
      responseUrl,
      triggerId,
      responses: this.responsesFor(responseUrl),
    };
    if (!forged) {
      const ack = this.applyCommandAck(channel, userId, command, result);
      if (ack !== undefined) out.ackResponse = ack;
    }
    return out;
  }

  /** Slack shows a command's ack body to the user, or its own error when the app failed to answer. */
  private applyCommandAck(
    channel: ChannelState,
    userId: string,
    command: string,
    result: DeliveryResult,
  ): AckResponse | undefined {
    const ws = this.s.workspace;
    if (result.status !== 200) {
      const error = result.timedOut ? "operation_timeout" : "dispatch_failed";
      ws.addEphemeral({
        from: "slackbot",
        channel: channel.id,
        user: userId,
        text: `${command} failed with the error "${error}"`,
        source: "ack",
      });
      return undefined;
    }
    if (result.body.trim() === "") return undefined;
    let ack: AckResponse = { response_type: "ephemeral", text: result.body };
    try {
      const parsed: unknown = JSON.parse(result.body);
      if (isObject(parsed)) {
        ack = { response_type: parsed.response_type === "in_channel" ? "in_channel" : "ephemeral" };
        if (typeof parsed.text === "string") ack.text = parsed.text;
        if (Array.isArray(parsed.blocks)) ack.blocks = parsed.blocks as Block[];
      }
    } catch {
      // a plain-text ack is shown as is
    }
    if (ack.response_type === "in_channel") {
      ws.post({
        channel: channel.id,
        user: ws.botUserId,
        text: ack.text ?? "",
        ...(ack.blocks !== undefined ? { blocks: ack.blocks } : {}),
        source: "response_url",
        fromBot: true,
      });
    } else {
      ws.addEphemeral({
        from: "bot",
        channel: channel.id,
        user: userId,
        text: ack.text ?? "",
        ...(ack.blocks !== undefined ? { blocks: ack.blocks } : {}),
        source: "ack",
      });
    }
    return ack;
  }

  /** Delivers one Events API event (event_callback envelope); pass eventId + retryNum to imitate a retry. */
  async event(event: JsonObject, opts: EventOptions = {}): Promise<EventResult> {
    const eventId = opts.eventId ?? newEventId();
    const envelope = eventEnvelope(this.s.workspace, event, eventId);
    const headers: Record<string, string> = {};
    if (opts.retryNum !== undefined) {
      headers["x-slack-retry-num"] = String(opts.retryNum);
      headers["x-slack-retry-reason"] = opts.retryReason ?? "http_timeout";
    } else if (opts.retryReason !== undefined) {
      headers["x-slack-retry-reason"] = opts.retryReason;
    }
    const result = await this.send({
      http: { body: JSON.stringify(envelope), contentType: "application/json", headers },
      socket: {
        type: "events_api",
        payload: envelope,
        acceptsResponsePayload: false,
        retryAttempt: opts.retryNum ?? 0,
        retryReason: opts.retryNum === undefined ? (opts.retryReason ?? "") : (opts.retryReason ?? "timeout"),
      },
      ...forgery(opts),
    });
    return { ...result, eventId };
  }

  /**
   * Delivers an event the way Slack does when the bot fails to ack (no 2xx within the deadline): the same
   * event_id again with X-Slack-Retry-Num 1..`retries` (Slack waits 1 min, then 5 min; here `delayMs`).
   */
  async eventWithRetries(
    event: JsonObject,
    opts: { retries?: number; delayMs?: number } = {},
  ): Promise<EventResult[]> {
    const results = [await this.event(event)];
    const eventId = results[0]?.eventId ?? newEventId();
    for (let retryNum = 1; retryNum <= (opts.retries ?? 3); retryNum++) {
      const last = results[results.length - 1];
      if (last !== undefined && last.status >= 200 && last.status < 300) break;
      if ((opts.delayMs ?? 0) > 0) await new Promise((resolve) => setTimeout(resolve, opts.delayMs));
      const retryReason =
        this.mode === "socket"
          ? "timeout"
          : last?.timedOut === true
            ? "http_timeout"
            : last?.status === 0
              ? "connection_failed"
              : "http_error";
      results.push(await this.event(event, { eventId, retryNum, retryReason }));
    }
    return results;
  }

  /** Slack's Request URL check: `url_verification`; `ok` when the bot echoed the challenge. */
  async urlVerification(): Promise<DeliveryResult & { ok: boolean }> {
    if (this.mode === "socket")
      throw new Error("SlackEmulator: Socket Mode apps have no Request URL to verify");
    const challenge = randomBytes(16).toString("base64url");
    const result = await deliver({
      endpoint: this.endpoint(),
      body: JSON.stringify({
        token: this.s.workspace.verificationToken,
        challenge,
        type: "url_verification",
      }),
      contentType: "application/json",
      signingSecret: this.s.opts.signingSecret,
      deadlineMs: this.s.ackDeadlineMs,
    });
    let echoed: unknown;
    try {
      echoed = (JSON.parse(result.body) as JsonObject).challenge;
    } catch {
      echoed = result.body;
    }
    return { ...result, ok: result.status === 200 && echoed === challenge };
  }
}

/** The forged-request options of a delivery (HTTP only). */
export function forgery(opts: { signWith?: string; timestamp?: number }): {
  signWith?: string;
  timestamp?: number;
} {
  return {
    ...(opts.signWith !== undefined ? { signWith: opts.signWith } : {}),
    ...(opts.timestamp !== undefined ? { timestamp: opts.timestamp } : {}),
  };
}
