import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { actionIds, findElement, isObject, plainText } from "./block-elements.ts";
import { deliver } from "./deliver.ts";
import { decodeJsonFields, parseApiArgs, readBody, sendJson, sendText, uploadBytes } from "./http-body.ts";
import {
  blockActionsPayload,
  eventEnvelope,
  newEventId,
  newResponseId,
  newTriggerId,
  slashCommandBody,
} from "./payloads.ts";
import { RateLimiter } from "./rate-limiter.ts";
import { firstLine, renderAllConversations } from "./render-conversation.ts";
import { applyResponsePost } from "./response-url.ts";
import { type EnvelopeInput, SocketModeLink } from "./socket-mode.ts";
import type {
  AckResponse,
  ActionResult,
  ApiCall,
  Block,
  CommandResult,
  DeliveryResult,
  EmulatorWarning,
  EphemeralMessage,
  EventResult,
  JsonObject,
  RateLimitSettings,
  RateLimitSettingsInput,
  ResponseUrlPost,
  SlackEmulatorOptions,
  SlackFile,
  SlackMessage,
  SocketConnection,
  SocketDisconnectReason,
  SocketEnvelope,
  UserAction,
} from "./types.ts";
import { validateBlocks } from "./validate-blocks.ts";
import { type ApiContext, type ForcedFailure, handleApiCall, withBlockIds } from "./web-api.ts";
import { type ChannelState, type ResponseUrlState, SlackWorkspace } from "./workspace.ts";

/** A response_url accepts 5 posts within 30 minutes (Slack's documented limits). */
const RESPONSE_URL_MAX_USES = 5;
const RESPONSE_URL_TTL_MS = 30 * 60 * 1000;

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

export interface WaitForOptions {
  timeoutMs?: number;
  intervalMs?: number;
  /** What is awaited, for the timeout error. */
  what?: string;
}

/**
 * The Slack emulator: a Web API server the bot calls (records everything, enforces rate limits) and a
 * client that acts as Slack towards the bot (signed slash commands, events, button clicks, reactions).
 */
export class SlackEmulator {
  readonly url: string;
  readonly apiUrl: string;
  readonly workspace: SlackWorkspace;
  private botEndpoint: string | undefined;
  private mode: Transport = "http";
  private socketLink: SocketModeLink | undefined;
  private readonly limiter: RateLimiter;
  private readonly forcedFailures = new Map<string, ForcedFailure>();
  private readonly delays = new Map<string, number>();
  private readonly responsePosts: ResponseUrlPost[] = [];
  private readonly ackDeadlineMs: number;
  private rateLimited = 0;
  private readonly ctx: ApiContext;

  constructor(
    private readonly opts: SlackEmulatorOptions,
    private readonly server: Server,
    url: string,
  ) {
    this.url = url;
    this.apiUrl = `${url}/api/`;
    this.workspace = new SlackWorkspace(opts);
    this.limiter = new RateLimiter(opts.rateLimits);
    this.ackDeadlineMs = opts.ackDeadlineMs ?? 3000;
    this.ctx = {
      ws: this.workspace,
      limiter: this.limiter,
      baseUrl: url,
      validTokens: new Set([opts.botToken, ...(opts.extraTokens ?? [])]),
      appTokens: new Set(),
    };
    if (opts.appToken !== undefined) this.useSocketMode(opts.appToken);
  }

  // ---------------------------------------------------------------- server side

  /** @internal the node:http request listener. */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", this.url);
    try {
      if (url.pathname.startsWith("/api/")) {
        await this.handleApi(req, res, url);
      } else if (url.pathname.startsWith("/response/") && req.method === "POST") {
        await this.handleResponseUrl(req, res, decodeURIComponent(url.pathname.slice("/response/".length)));
      } else if (url.pathname.startsWith("/upload/v1/") && req.method === "POST") {
        await this.handleUpload(req, res, url.pathname.slice("/upload/v1/".length));
      } else if (url.pathname.startsWith("/files/") && req.method === "GET") {
        this.handleFileDownload(req, res, url.pathname.split("/")[2] ?? "");
      } else {
        sendText(res, 404, "not found");
      }
    } catch (error) {
      if (!res.headersSent) sendJson(res, 500, { ok: false, error: "internal_error", detail: String(error) });
    }
  }

  private async handleApi(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const method = url.pathname.slice("/api/".length);
    const raw = await readBody(req);
    let parsed: Awaited<ReturnType<typeof parseApiArgs>>;
    try {
      parsed = await parseApiArgs(req.headers["content-type"], raw, url.searchParams);
    } catch {
      this.record(method, {}, 200, false, "invalid_json");
      sendJson(res, 200, { ok: false, error: "invalid_json" });
      return;
    }
    const delay = this.delays.get(method) ?? this.delays.get("*") ?? 0;
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    const answer = handleApiCall(
      this.ctx,
      { method, args: parsed.args, isJson: parsed.isJson, authorization: req.headers.authorization },
      this.forcedFailures,
    );
    const ok = answer.body.ok === true;
    const error = typeof answer.body.error === "string" ? answer.body.error : undefined;
    if (answer.status === 429) this.rateLimited += 1;
    const { token: _token, ...args } = parsed.args;
    this.record(method, decodeJsonFields(args), answer.status, ok, error);
    sendJson(res, answer.status, answer.body, answer.headers);
  }

  private record(
    method: string,
    args: JsonObject,
    status: number,
    ok: boolean,
    error: string | undefined,
  ): void {
    const call: ApiCall = { method, args, at: Date.now(), status, ok };
    if (error !== undefined) call.error = error;
    this.workspace.calls.push(call);
  }

  private async handleResponseUrl(req: IncomingMessage, res: ServerResponse, id: string): Promise<void> {
    const raw = (await readBody(req)).toString("utf8");
    let body: JsonObject = {};
    try {
      const type = (req.headers["content-type"] ?? "").split(";")[0]?.trim();
      if (type === "application/x-www-form-urlencoded") {
        body = JSON.parse(new URLSearchParams(raw).get("payload") ?? "{}") as JsonObject;
      } else {
        body = JSON.parse(raw) as JsonObject;
      }
    } catch {
      sendJson(res, 400, { ok: false, error: "invalid_payload" });
      return;
    }
    const state = this.workspace.responseUrls.get(id);
    const post: ResponseUrlPost = {
      id,
      at: Date.now(),
      body,
      response_type: body.response_type === "in_channel" ? "in_channel" : "ephemeral",
      replace_original: body.replace_original === true || body.replace_original === "true",
      delete_original: body.delete_original === true || body.delete_original === "true",
      ok: true,
    };
    if (typeof body.text === "string") post.text = body.text;
    if (Array.isArray(body.blocks)) post.blocks = body.blocks as Block[];
    const fail = (status: number, error: string): void => {
      post.ok = false;
      post.error = error;
      this.responsePosts.push(post);
      sendJson(res, status, { ok: false, error });
    };
    if (state === undefined) return fail(404, "invalid_url");
    if (Date.now() - state.createdAt > RESPONSE_URL_TTL_MS) return fail(404, "expired_url");
    if (state.uses >= RESPONSE_URL_MAX_USES) return fail(404, "used_url");
    if (post.blocks !== undefined) {
      const errors = validateBlocks(post.blocks);
      if (errors.length > 0) return fail(400, "invalid_blocks");
      post.blocks = withBlockIds(post.blocks);
    }
    if (!post.delete_original && (post.text ?? "") === "" && post.blocks === undefined) {
      return fail(400, "no_text");
    }
    state.uses += 1;
    this.responsePosts.push(post);
    applyResponsePost(this.workspace, state, post);
    sendJson(res, 200, { ok: true });
  }

  private async handleUpload(req: IncomingMessage, res: ServerResponse, fileId: string): Promise<void> {
    const upload = this.workspace.uploads.get(fileId);
    const raw = await readBody(req);
    if (upload === undefined) {
      sendText(res, 404, "Not Found");
      return;
    }
    const bytes = await uploadBytes(req.headers["content-type"], raw);
    if (bytes.length !== upload.length) {
      this.workspace.warn(
        "files.upload",
        `upload_length_mismatch: ${fileId} declared ${upload.length}, got ${bytes.length}`,
      );
    }
    upload.file.content = bytes;
    upload.file.size = bytes.length;
    upload.uploaded = true;
    sendText(res, 200, `OK - ${bytes.length}`);
  }

  private handleFileDownload(req: IncomingMessage, res: ServerResponse, fileId: string): void {
    const token = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? "")?.[1];
    const upload = this.workspace.uploads.get(fileId);
    if (token === undefined || !this.ctx.validTokens.has(token)) {
      sendText(res, 403, "forbidden");
      return;
    }
    if (upload?.file.content === undefined) {
      sendText(res, 404, "not found");
      return;
    }
    res.writeHead(200, {
      "content-type": upload.file.mimetype,
      "content-length": upload.file.content.length,
    });
    res.end(upload.file.content);
  }

  /** @internal the node:http `upgrade` listener: Socket Mode connections (`/link/?ticket=…`). */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    if (this.socketLink === undefined) {
      socket.end("HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
      return;
    }
    this.socketLink.handleUpgrade(req, socket, head);
  }

  // ---------------------------------------------------------------- client side (Slack -> bot)

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
    this.ctx.appTokens.clear();
    this.ctx.appTokens.add(appToken);
    if (this.socketLink === undefined) {
      const link = new SocketModeLink({
        appId: this.workspace.appId,
        origin: this.url.replace(/^http/, "ws"),
        pingIntervalMs: this.opts.socketPingIntervalMs ?? 10_000,
      });
      this.socketLink = link;
      this.ctx.openSocket = () => link.issueUrl();
    }
    this.mode = "socket";
  }

  /** Where deliveries go now. */
  get transport(): Transport {
    return this.mode;
  }

  private link(): SocketModeLink {
    if (this.socketLink === undefined) throw new Error("SlackEmulator: call useSocketMode(appToken) first");
    return this.socketLink;
  }

  /** One delivery over the transport in use: a signed POST, or an envelope waiting for its ack. */
  private async send(delivery: Delivery): Promise<DeliveryResult> {
    if (this.mode === "socket") {
      if (delivery.signWith !== undefined || delivery.timestamp !== undefined) {
        throw new Error(
          "SlackEmulator: signWith/timestamp forge an HTTP request; Socket Mode deliveries are not signed",
        );
      }
      return await this.link().deliver(delivery.socket, this.ackDeadlineMs);
    }
    return await deliver({
      endpoint: this.endpoint(),
      body: delivery.http.body,
      contentType: delivery.http.contentType,
      signingSecret: delivery.signWith ?? this.opts.signingSecret,
      deadlineMs: this.ackDeadlineMs,
      ...(delivery.http.headers !== undefined ? { headers: delivery.http.headers } : {}),
      ...(delivery.timestamp !== undefined ? { timestamp: delivery.timestamp } : {}),
    });
  }

  private endpoint(): string {
    if (this.botEndpoint === undefined) throw new Error("SlackEmulator: call setBotEndpoint(url) first");
    return this.botEndpoint;
  }

  private defaultChannel(): ChannelState {
    const first = this.opts.channels?.[0];
    const channel = this.workspace.resolveChannel(first?.id ?? "C0LLMOPS01");
    if (channel === undefined) throw new Error("SlackEmulator: no default channel");
    return channel;
  }

  private channelOrThrow(ref: string): ChannelState {
    const channel = this.workspace.resolveChannel(ref);
    if (channel === undefined) throw new Error(`SlackEmulator: unknown channel ${ref}`);
    return channel;
  }

  private newResponseUrl(state: Omit<ResponseUrlState, "id" | "uses" | "createdAt">): string {
    const id = newResponseId(this.workspace.teamId);
    this.workspace.responseUrls.set(id, { ...state, id, uses: 0, createdAt: Date.now() });
    return `${this.url}/response/${id}`;
  }

  private responsesFor(responseUrl: string): () => ResponseUrlPost[] {
    const id = responseUrl.slice(`${this.url}/response/`.length);
    return () => this.responsePosts.filter((p) => p.id === id);
  }

  /** A user types `/llm <text>`: a correctly signed, form-encoded slash command with response_url and trigger_id. */
  async command(userId: string, text: string, opts: CommandOptions = {}): Promise<CommandResult> {
    const channel = opts.channel !== undefined ? this.channelOrThrow(opts.channel) : this.defaultChannel();
    const command = opts.command ?? "/llm";
    const triggerId = newTriggerId();
    const responseUrl = this.newResponseUrl({ kind: "command", channel: channel.id, user: userId });
    const body = slashCommandBody(this.workspace, {
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
      this.workspace.recordAction({
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
    const ws = this.workspace;
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
    const envelope = eventEnvelope(this.workspace, event, eventId);
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
      body: JSON.stringify({ token: this.workspace.verificationToken, challenge, type: "url_verification" }),
      contentType: "application/json",
      signingSecret: this.opts.signingSecret,
      deadlineMs: this.ackDeadlineMs,
    });
    let echoed: unknown;
    try {
      echoed = (JSON.parse(result.body) as JsonObject).challenge;
    } catch {
      echoed = result.body;
    }
    return { ...result, ok: result.status === 200 && echoed === challenge };
  }

  private messageOrThrow(channel: ChannelState, ts: string): SlackMessage {
    const message = this.workspace.findMessage(channel.id, ts);
    if (message === undefined) throw new Error(`SlackEmulator: no message ${ts} in ${channel.id}`);
    return message;
  }

  /** A user adds a reaction: recorded on the message, and `reaction_added` is sent to the bot. */
  async react(userId: string, channel: string, ts: string, name: string): Promise<EventResult> {
    const ch = this.channelOrThrow(channel);
    const message = this.messageOrThrow(ch, ts);
    if (this.workspace.addReaction(message, userId, name) === "already_reacted") {
      throw new Error(`SlackEmulator: ${userId} already reacted :${name}: to ${ts}`);
    }
    this.workspace.recordAction({
      kind: "reaction",
      channel: ch.id,
      user: userId,
      text: name,
      messageTs: ts,
    });
    return this.event({
      type: "reaction_added",
      user: userId,
      reaction: name,
      item_user: message.user,
      item: { type: "message", channel: ch.id, ts },
    });
  }

  /** A user removes a reaction: `reaction_removed` is sent to the bot. */
  async unreact(userId: string, channel: string, ts: string, name: string): Promise<EventResult> {
    const ch = this.channelOrThrow(channel);
    const message = this.messageOrThrow(ch, ts);
    if (this.workspace.removeReaction(message, userId, name) === "no_reaction") {
      throw new Error(`SlackEmulator: ${userId} has no :${name}: on ${ts}`);
    }
    this.workspace.recordAction({
      kind: "unreaction",
      channel: ch.id,
      user: userId,
      text: name,
      messageTs: ts,
    });
    return this.event({
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
    const ch = this.channelOrThrow(channel);
    const ws = this.workspace;
    const message = ws.findMessage(ch.id, ts);
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
    const responseUrl = this.newResponseUrl({
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
    const result = await this.send({
      http: {
        body: new URLSearchParams({ payload: JSON.stringify(payload) }).toString(),
        contentType: "application/x-www-form-urlencoded",
      },
      socket: { type: "interactive", payload, acceptsResponsePayload: true },
      ...forgery(opts),
    });
    return { ...result, responseUrl, triggerId, responses: this.responsesFor(responseUrl) };
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
    const ch = this.channelOrThrow(channel);
    const message = this.workspace.post({
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
      team: this.workspace.teamId,
      ...(opts.threadTs !== undefined ? { thread_ts: opts.threadTs } : {}),
    };
    const channelType = ch.isIm ? "im" : ch.isPrivate ? "group" : "channel";
    const results = [await this.event({ type: "message", ...base, channel_type: channelType })];
    if (text.includes(`<@${this.workspace.botUserId}>`)) {
      results.push(await this.event({ type: "app_mention", ...base }));
    }
    return { message, results };
  }

  // ---------------------------------------------------------------- inspection

  /** Top-level messages of a channel (id or "#name"), in order; thread broadcasts included. */
  messages(channel: string): SlackMessage[] {
    const ch = this.workspace.resolveChannel(channel);
    return ch === undefined ? [] : this.workspace.topLevel(ch.id);
  }

  /** The replies in a thread, oldest first (the parent is `message(channel, threadTs)`). */
  thread(channel: string, threadTs: string): SlackMessage[] {
    const ch = this.workspace.resolveChannel(channel);
    return ch === undefined ? [] : this.workspace.replies(ch.id, threadTs);
  }

  message(channel: string, ts: string): SlackMessage | undefined {
    const ch = this.workspace.resolveChannel(channel);
    return ch === undefined ? undefined : this.workspace.findMessage(ch.id, ts);
  }

  /** Ephemeral messages in a channel, optionally only those shown to one user. */
  ephemerals(channel: string, userId?: string): EphemeralMessage[] {
    const ch = this.workspace.resolveChannel(channel);
    if (ch === undefined) return [];
    return this.workspace.ephemerals.filter(
      (e) => e.channel === ch.id && (userId === undefined || e.user === userId),
    );
  }

  /** Every Web API call, or those of one method, in order. */
  calls(method?: string): ApiCall[] {
    return method === undefined
      ? [...this.workspace.calls]
      : this.workspace.calls.filter((c) => c.method === method);
  }

  /** Every post to any response_url. */
  responses(): ResponseUrlPost[] {
    return [...this.responsePosts];
  }

  /** Things the emulator noticed that Slack tolerates (missing text fallback, bad thread_ts, …). */
  warnings(): EmulatorWarning[] {
    return [...this.workspace.warnings];
  }

  userActions(): UserAction[] {
    return [...this.workspace.userActions];
  }

  /** Files completed with files.completeUploadExternal or still pending, by id. */
  files(): SlackFile[] {
    return [...this.workspace.uploads.values()].map((u) => u.file);
  }

  /** How many calls were answered 429. */
  rateLimitedCount(): number {
    return this.rateLimited;
  }

  /** Every Socket Mode connection the bot opened, in order (open and closed). */
  socketConnections(): SocketConnection[] {
    return this.socketLink?.connections() ?? [];
  }

  /** Every envelope sent over Socket Mode, with its ack (`ackedAt`, `ackPayload`, `late`). */
  socketEnvelopes(): SocketEnvelope[] {
    return [...(this.socketLink?.envelopes ?? [])];
  }

  /**
   * Resolves once the bot has `count` Socket Mode connections open (default 1) that were opened after the
   * connection with id `after` (default: any) — e.g. the one it opened again after a `disconnect`.
   */
  async waitForSocket(
    opts: { after?: number; count?: number; timeoutMs?: number } = {},
  ): Promise<SocketConnection[]> {
    const fresh = () =>
      this.socketConnections().filter((c) => c.open && c.helloAt !== undefined && c.id > (opts.after ?? 0));
    return await this.waitFor(() => (fresh().length >= (opts.count ?? 1) ? fresh() : undefined), {
      timeoutMs: opts.timeoutMs ?? 15_000,
      what: `${opts.count ?? 1} Socket Mode connection(s) opened after #${opts.after ?? 0}`,
    });
  }

  // ---------------------------------------------------------------- fault switches

  /** Scale ({scale: 10} = ten times more generous), disable ({enabled: false}) or retune the limits. */
  setRateLimits(settings: RateLimitSettingsInput): void {
    this.limiter.configure(settings);
  }

  rateLimits(): RateLimitSettings {
    return this.limiter.current;
  }

  /** The next `count` calls of `method` answer 429 with `Retry-After: retryAfterSec`. */
  forceRateLimit(method: string, count = 1, retryAfterSec = 1): void {
    this.limiter.force(method, count, retryAfterSec);
  }

  /** The next `count` calls of `method` answer `{ok:false, error}` (with HTTP `status`, default 200). */
  failNext(method: string, error: string, opts: { count?: number; status?: number } = {}): void {
    this.forcedFailures.set(method, { error, status: opts.status ?? 200, remaining: opts.count ?? 1 });
  }

  /** Delays every answer of `method` ("*" for all) by `ms`; 0 removes the delay. */
  setApiDelay(method: string, ms: number): void {
    if (ms <= 0) this.delays.delete(method);
    else this.delays.set(method, ms);
  }

  /** Every response_url issued so far answers 404 `expired_url` from now on. */
  expireResponseUrls(): void {
    for (const state of this.workspace.responseUrls.values()) state.createdAt = 0;
  }

  /**
   * Socket Mode: Slack's `{ type: "disconnect", reason }` on every open connection (or one), e.g.
   * `refresh_requested` (a routine refresh) or `link_disabled` (Socket Mode turned off). A connection the
   * app has not closed after `closeAfterMs` (default 10 s, like Slack's warning) is closed by Slack.
   * Returns how many connections were told.
   */
  disconnectSocket(
    reason: SocketDisconnectReason,
    opts: { connection?: number; closeAfterMs?: number } = {},
  ): number {
    return this.link().disconnect(reason, opts);
  }

  /** Socket Mode: cuts every open connection without a word (a network failure). Returns how many. */
  dropSockets(): number {
    return this.link().drop();
  }

  // ---------------------------------------------------------------- waiting and stopping

  /** Polls `predicate` until it returns a value; on timeout throws with `what` and a transcript. */
  async waitFor<T>(predicate: () => T | undefined | null | false, opts: WaitForOptions = {}): Promise<T> {
    const timeoutMs = opts.timeoutMs ?? 5000;
    const intervalMs = opts.intervalMs ?? 20;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = predicate();
      if (value !== undefined && value !== null && value !== false) return value;
      if (Date.now() >= deadline) break;
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
    const recent = this.workspace.calls
      .slice(-10)
      .map((c) => `  ${c.method} ${c.ok ? "ok" : `error=${c.error ?? c.status}`}`)
      .join("\n");
    throw new Error(
      `SlackEmulator.waitFor timed out after ${timeoutMs} ms waiting for ${opts.what ?? "a condition"}\n` +
        `--- conversations ---\n${renderAllConversations(this) || "(no messages)"}\n` +
        `--- last API calls ---\n${recent || "  (none)"}`,
    );
  }

  async stop(): Promise<void> {
    await this.socketLink?.close();
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}

/** Starts the emulator on 127.0.0.1 at a port the OS picks. */
export async function startSlackEmulator(opts: SlackEmulatorOptions): Promise<SlackEmulator> {
  let emulator: SlackEmulator | undefined;
  const server = createServer((req, res) => {
    if (emulator === undefined) {
      sendText(res, 503, "starting");
      return;
    }
    void emulator.handle(req, res);
  });
  server.on("upgrade", (req, socket, head) => {
    if (emulator === undefined) socket.destroy();
    else emulator.handleUpgrade(req, socket, head);
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const address = server.address() as AddressInfo;
  emulator = new SlackEmulator(opts, server, `http://127.0.0.1:${address.port}`);
  return emulator;
}

/** The forged-request options of a delivery (HTTP only). */
function forgery(opts: { signWith?: string; timestamp?: number }): { signWith?: string; timestamp?: number } {
  return {
    ...(opts.signWith !== undefined ? { signWith: opts.signWith } : {}),
    ...(opts.timestamp !== undefined ? { timestamp: opts.timestamp } : {}),
  };
}
