import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { handleRequest, handleUpgrade } from "./api-server.ts";
import { send } from "./deliver.ts";
import { BotDeliveries, type CommandOptions, type EventOptions, type Transport } from "./deliveries.ts";
import { createEmulatorState, type EmulatorState } from "./emulator-state.ts";
import { sendText } from "./http-body.ts";
import { Inspection, type WaitForOptions } from "./inspection.ts";
import type {
  ActionResult,
  ApiCall,
  CommandResult,
  DeliveryResult,
  EmulatorWarning,
  EphemeralMessage,
  EventResult,
  JsonObject,
  RateLimitSettings,
  RateLimitSettingsInput,
  ResponseUrlPost,
  SignedRequest,
  SlackEmulatorOptions,
  SlackFile,
  SlackMessage,
  SocketConnection,
  SocketDisconnectReason,
  SocketEnvelope,
  UserAction,
} from "./types.ts";
import { UserActions } from "./user-actions.ts";
import type { SlackWorkspace } from "./workspace.ts";

export type { CommandOptions, EventOptions, Transport, WaitForOptions };

/**
 * The Slack emulator: a Web API server the bot calls (records everything, enforces rate limits) and a
 * client that acts as Slack towards the bot (signed slash commands, events, button clicks, reactions).
 *
 * This class is the emulator's whole public API; the work is done by its parts: the server side in
 * api-server.ts, deliveries to the bot in deliveries.ts, what users do in user-actions.ts, inspection in
 * inspection.ts, the Web API's fault switches in fault-switches.ts (rate limits: rate-limiter.ts).
 */
export class SlackEmulator {
  readonly url: string;
  readonly apiUrl: string;
  readonly workspace: SlackWorkspace;
  private readonly state: EmulatorState;
  private readonly deliveries: BotDeliveries;
  private readonly actions: UserActions;
  private readonly inspection: Inspection;

  constructor(
    opts: SlackEmulatorOptions,
    private readonly server: Server,
    url: string,
  ) {
    this.url = url;
    this.apiUrl = `${url}/api/`;
    this.state = createEmulatorState(opts, url);
    this.workspace = this.state.workspace;
    this.deliveries = new BotDeliveries(this.state);
    this.actions = new UserActions(this.state, this.deliveries);
    this.inspection = new Inspection(this.state);
    if (opts.appToken !== undefined) this.useSocketMode(opts.appToken);
  }

  // ---------------------------------------------------------------- server side

  /** @internal the node:http request listener. */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    await handleRequest(this.state, req, res);
  }

  /** @internal the node:http `upgrade` listener: Socket Mode connections (`/link/?ticket=…`). */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    handleUpgrade(this.state, req, socket, head);
  }

  // ---------------------------------------------------------------- client side (Slack -> bot)

  /** The bot's Request URL, e.g. http://127.0.0.1:3000/slack/events. Deliveries go there (HTTP) from now on. */
  setBotEndpoint(url: string): void {
    this.deliveries.setBotEndpoint(url);
  }

  /**
   * Socket Mode: `apps.connections.open` accepts `appToken` (an app-level `xapp-…` token) and answers a
   * WebSocket URL on this emulator; commands, events and clicks go over the connections the bot opened
   * from now on, as envelopes it must ack. `setBotEndpoint()` switches back to HTTP.
   */
  useSocketMode(appToken: string): void {
    this.deliveries.useSocketMode(appToken);
  }

  /** How long deliveries wait for the bot's ack from now on (Slack's is 3 s: a test of a late ack). */
  setAckDeadline(ms: number): void {
    this.state.ackDeadlineMs = ms;
  }

  /** Where deliveries go now. */
  get transport(): Transport {
    return this.deliveries.transport;
  }

  /** A user types `/llm <text>`: a correctly signed, form-encoded slash command with response_url and trigger_id. */
  async command(userId: string, text: string, opts: CommandOptions = {}): Promise<CommandResult> {
    return await this.deliveries.command(userId, text, opts);
  }

  /** Delivers one Events API event (event_callback envelope); pass eventId + retryNum to imitate a retry. */
  async event(event: JsonObject, opts: EventOptions = {}): Promise<EventResult> {
    return await this.deliveries.event(event, opts);
  }

  /**
   * Delivers an event the way Slack does when the bot fails to ack (no 2xx within the deadline): the same
   * event_id again with X-Slack-Retry-Num 1..`retries` (Slack waits 1 min, then 5 min; here `delayMs`).
   */
  async eventWithRetries(
    event: JsonObject,
    opts: { retries?: number; delayMs?: number } = {},
  ): Promise<EventResult[]> {
    return await this.deliveries.eventWithRetries(event, opts);
  }

  /**
   * Sends a request captured earlier (a delivery result's `request`) again, byte for byte: its body,
   * timestamp and signature unchanged — what someone who captured a real request from Slack (a proxy's
   * log, a leaked capture) can do within the signature's window. Nothing is recorded as a user action.
   */
  async resend(request: SignedRequest): Promise<DeliveryResult> {
    return await send(request, this.state.ackDeadlineMs);
  }

  /** Slack's Request URL check: `url_verification`; `ok` when the bot echoed the challenge. */
  async urlVerification(): Promise<DeliveryResult & { ok: boolean }> {
    return await this.deliveries.urlVerification();
  }

  /** A user adds a reaction: recorded on the message, and `reaction_added` is sent to the bot. */
  async react(userId: string, channel: string, ts: string, name: string): Promise<EventResult> {
    return await this.actions.react(userId, channel, ts, name);
  }

  /** A user removes a reaction: `reaction_removed` is sent to the bot. */
  async unreact(userId: string, channel: string, ts: string, name: string): Promise<EventResult> {
    return await this.actions.unreact(userId, channel, ts, name);
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
    return await this.actions.clickButton(userId, channel, ts, actionId, value, opts);
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
    return await this.actions.userMessage(userId, channel, text, opts);
  }

  // ---------------------------------------------------------------- inspection

  /**
   * Top-level messages of a channel (id or "#name"), in order; thread broadcasts included. A deleted message
   * is not there; a deleted thread parent with replies shows as its tombstone (`subtype: "tombstone"`).
   */
  messages(channel: string): SlackMessage[] {
    return this.inspection.messages(channel);
  }

  /** The replies in a thread, oldest first (the parent is `message(channel, threadTs)`); deleted ones are gone. */
  thread(channel: string, threadTs: string): SlackMessage[] {
    return this.inspection.thread(channel, threadTs);
  }

  /** One message as the channel shows it: undefined once deleted, a tombstone if it was a parent with replies. */
  message(channel: string, ts: string): SlackMessage | undefined {
    return this.inspection.message(channel, ts);
  }

  /** The messages deleted in a channel (chat.delete, deleteMessage, delete_original), as they were, in order. */
  deletedMessages(channel: string): SlackMessage[] {
    return this.inspection.deletedMessages(channel);
  }

  /** Ephemeral messages in a channel, optionally only those shown to one user. */
  ephemerals(channel: string, userId?: string): EphemeralMessage[] {
    return this.inspection.ephemerals(channel, userId);
  }

  /** Every Web API call, or those of one method, in order. */
  calls(method?: string): ApiCall[] {
    return this.inspection.calls(method);
  }

  /** Every post to any response_url. */
  responses(): ResponseUrlPost[] {
    return this.inspection.responses();
  }

  /** Things the emulator noticed that Slack tolerates (missing text fallback, bad thread_ts, …). */
  warnings(): EmulatorWarning[] {
    return this.inspection.warnings();
  }

  userActions(): UserAction[] {
    return this.inspection.userActions();
  }

  /** Files completed with files.completeUploadExternal or still pending, by id. */
  files(): SlackFile[] {
    return this.inspection.files();
  }

  /** How many calls were answered 429. */
  rateLimitedCount(): number {
    return this.inspection.rateLimitedCount();
  }

  /** Every Socket Mode connection the bot opened, in order (open and closed). */
  socketConnections(): SocketConnection[] {
    return this.inspection.socketConnections();
  }

  /** Every envelope sent over Socket Mode, with its ack (`ackedAt`, `ackPayload`, `late`). */
  socketEnvelopes(): SocketEnvelope[] {
    return this.inspection.socketEnvelopes();
  }

  /**
   * Resolves once the bot has `count` Socket Mode connections open (default 1) that were opened after the
   * connection with id `after` (default: any) — e.g. the one it opened again after a `disconnect`.
   */
  async waitForSocket(
    opts: { after?: number; count?: number; timeoutMs?: number } = {},
  ): Promise<SocketConnection[]> {
    return await this.inspection.waitForSocket(opts);
  }

  /** Polls `predicate` until it returns a value; on timeout throws with `what` and a transcript. */
  async waitFor<T>(predicate: () => T | undefined | null | false, opts: WaitForOptions = {}): Promise<T> {
    return await this.inspection.waitFor(predicate, opts);
  }

  // ---------------------------------------------------------------- fault switches

  /** Scale ({scale: 10} = ten times more generous), disable ({enabled: false}) or retune the limits. */
  setRateLimits(settings: RateLimitSettingsInput): void {
    this.state.limiter.configure(settings);
  }

  rateLimits(): RateLimitSettings {
    return this.state.limiter.current;
  }

  /** The next `count` calls of `method` answer 429 with `Retry-After: retryAfterSec`. */
  forceRateLimit(method: string, count = 1, retryAfterSec = 1): void {
    this.state.limiter.force(method, count, retryAfterSec);
  }

  /** The next `count` calls of `method` answer `{ok:false, error}` (with HTTP `status`, default 200). */
  failNext(
    method: string,
    error: string,
    opts: { count?: number; status?: number; where?: (args: JsonObject) => boolean } = {},
  ): void {
    this.state.faults.failNext(method, error, opts);
  }

  /**
   * A Slack outage: every call of `methods` ("*" for all) answers `{ok:false, error}` with HTTP `status`
   * (default 200; `status: 503` for an outage as WebClient meets it: it retries) until `ms` have passed.
   * Calls during the window are recorded like any other (`calls()`: `ok: false`, the status, the error).
   */
  failFor(methods: string | string[], error: string, opts: { ms: number; status?: number }): void {
    this.state.faults.failFor(methods, error, opts);
  }

  /** Ends every `failFor` window now. */
  endOutage(): void {
    this.state.faults.endOutage();
  }

  /** Delays every answer of `method` ("*" for all) by `ms`; 0 removes the delay. */
  setApiDelay(method: string, ms: number): void {
    this.state.faults.setApiDelay(method, ms);
  }

  /**
   * A message deleted by a workspace admin (e.g. someone removes the bot's card), deleted the way Slack
   * deletes it (SlackWorkspace.remove): a thread parent that has replies becomes a tombstone — Slackbot's
   * "This message was deleted." — and its replies stay; any other message is gone. From then on
   * chat.update, reactions.add (and every method acting on a message) answer `message_not_found` for that
   * ts, and chat.postMessage with it as `thread_ts` posts to the channel when nothing is left of it (into
   * the thread under a tombstone). No event is sent: the bot subscribes to no message events. Throws when
   * the channel has no such message (or it is already deleted).
   */
  deleteMessage(channel: string, ts: string): "tombstoned" | "removed" {
    const ch = this.workspace.resolveChannel(channel);
    const message = ch === undefined ? undefined : this.workspace.findLiveMessage(ch.id, ts);
    if (message === undefined) throw new Error(`SlackEmulator: no message ${ts} in ${channel} to delete`);
    return this.workspace.remove(message);
  }

  /**
   * A workspace admin changes who is in a user group (Slack's usergroups.users.update replaces the whole
   * member list: https://docs.slack.dev/reference/methods/usergroups.users.update). From now on
   * usergroups.users.list answers the new members. No event is sent: modelswap subscribes to none
   * (`subteam_members_changed` would need the usergroups:read event subscription). Throws for an unknown group.
   */
  /**
   * A workspace admin changes the app's bot scopes and it is reinstalled (or scopes are revoked): the
   * bot token's answers list these in `x-oauth-scopes` from now on.
   */
  setGrantedScopes(scopes: readonly string[]): void {
    this.state.ctx.grantedScopes = [...scopes];
  }

  setUserGroupMembers(groupId: string, users: readonly string[]): void {
    const group = this.workspace.userGroups.find((g) => g.id === groupId);
    if (group === undefined) throw new Error(`SlackEmulator: no user group ${groupId}`);
    group.users = [...users];
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
    return this.deliveries.link().disconnect(reason, opts);
  }

  /** Socket Mode: cuts every open connection without a word (a network failure). Returns how many. */
  dropSockets(): number {
    return this.deliveries.link().drop();
  }

  // ---------------------------------------------------------------- stopping

  async stop(): Promise<void> {
    await this.state.socketLink?.close();
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
