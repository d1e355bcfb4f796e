/**
 * Shared types of the Slack emulator: what it is configured with and what it records. Field names of
 * recorded Slack objects (messages, reactions, files) follow Slack's own JSON so tests read like the API.
 */

/** A JSON object as Slack sends and receives it (blocks, payloads, API arguments). */
export type JsonObject = Record<string, unknown>;

/** One Block Kit block; only `type` is known for certain. */
export type Block = JsonObject & { type: string };

export interface SlackUserConfig {
  id: string;
  /** The handle (`name` in users.info), e.g. "alice". */
  name: string;
  realName?: string;
  /** IANA zone, e.g. "Europe/Berlin"; default "UTC". */
  tz?: string;
  isBot?: boolean;
  isAdmin?: boolean;
}

export interface SlackUserGroupConfig {
  id: string;
  /** The mention handle without "@", e.g. "llm-approvers". */
  handle: string;
  name?: string;
  users: string[];
}

export interface SlackChannelConfig {
  id: string;
  /** Without "#", e.g. "llm-ops". */
  name: string;
  isPrivate?: boolean;
  /** Default true; when false, posting answers `not_in_channel`. */
  botIsMember?: boolean;
}

export type RateTier = "tier1" | "tier2" | "tier3" | "tier4" | "special";

/** A token bucket: `perMinute` sustained, up to `burst` calls at once. */
export interface RateAllowance {
  perMinute: number;
  burst: number;
}

export interface RateLimitSettings {
  enabled: boolean;
  /** Multiplies every allowance (rate and burst): 10 = ten times more generous, 0.5 = half. */
  scale: number;
  tiers: Record<RateTier, RateAllowance>;
  /** chat.postMessage's special limit, counted per channel. */
  postMessagePerChannel: RateAllowance;
}

export interface RateLimitSettingsInput {
  enabled?: boolean;
  scale?: number;
  tiers?: Partial<Record<RateTier, RateAllowance>>;
  postMessagePerChannel?: RateAllowance;
}

export interface SlackEmulatorOptions {
  botToken: string;
  signingSecret: string;
  /** The bot token's scopes (the `x-oauth-scopes` header of each answer); default manifest.yml's bot scopes. */
  scopes?: string[];
  /** Further tokens that the Web API accepts as the same bot (e.g. a second installation). */
  extraTokens?: string[];
  teamId?: string;
  teamDomain?: string;
  teamName?: string;
  users?: SlackUserConfig[];
  userGroups?: SlackUserGroupConfig[];
  /**
   * Known channels. When omitted, any well-formed channel id (C…, G…) is accepted and created on first
   * use, and "#name" resolves only to channels seen so far.
   */
  channels?: SlackChannelConfig[];
  botUserId?: string;
  botId?: string;
  /** The bot user's handle, shown as its author name. Default "modelswap". */
  botName?: string;
  appId?: string;
  /** The deprecated verification token Slack still puts in payloads. */
  verificationToken?: string;
  /** Slack's deadline for an HTTP answer from the bot (3 s); a later answer counts as a timeout. */
  ackDeadlineMs?: number;
  rateLimits?: RateLimitSettingsInput;
  /**
   * The app-level token (`xapp-…`) that `apps.connections.open` accepts. Giving it switches deliveries to
   * Socket Mode (as `useSocketMode(appToken)` does).
   */
  appToken?: string;
  /** How often Slack pings each Socket Mode connection (ms); 0 = never. Default 10 000. */
  socketPingIntervalMs?: number;
}

export interface SlackReaction {
  name: string;
  users: string[];
  count: number;
}

export interface SlackFile {
  id: string;
  name: string;
  title: string;
  mimetype: string;
  filetype: string;
  size: number;
  user: string;
  created: number;
  url_private: string;
  permalink: string;
  alt_text?: string;
  /** An image's size in pixels, as Slack reports it once the upload is processed. */
  original_w?: number;
  original_h?: number;
  /** The uploaded bytes (not part of Slack's JSON). */
  content?: Buffer;
}

export interface MessageEdit {
  at: number;
  text: string;
  blocks?: Block[];
}

export interface SlackMessage {
  type: "message";
  subtype?: string;
  channel: string;
  ts: string;
  thread_ts?: string;
  user: string;
  bot_id?: string;
  app_id?: string;
  team: string;
  text: string;
  blocks?: Block[];
  attachments?: JsonObject[];
  files?: SlackFile[];
  metadata?: JsonObject;
  reply_broadcast?: boolean;
  reactions: SlackReaction[];
  /** How many times chat.update (or replace_original) changed it. */
  edits: number;
  /** Earlier versions, oldest first (the current version is the message itself). */
  history: MessageEdit[];
  /**
   * Where it came from: the Web API, a response_url post, an upload, a simulated user, or Slack itself
   * (the tombstone of a deleted thread parent).
   */
  source: "api" | "response_url" | "upload" | "user" | "slack";
  /** Wall-clock ms when first posted. */
  postedAt: number;
  /** Ordering key across messages, ephemerals and user actions. */
  seq: number;
}

export interface EphemeralMessage {
  /** "slackbot" for Slack's own notices, e.g. `/llm failed with the error "operation_timeout"`. */
  from: "bot" | "slackbot";
  channel: string;
  /** The user who alone can see it. */
  user: string;
  ts: string;
  thread_ts?: string;
  text: string;
  blocks?: Block[];
  attachments?: JsonObject[];
  source: "api" | "response_url" | "ack";
  /** How many times a response_url with replace_original changed it. */
  edits: number;
  at: number;
  seq: number;
}

export interface ApiCall {
  method: string;
  /** Decoded arguments; JSON-valued fields (blocks, attachments, files, metadata) are parsed. */
  args: JsonObject;
  at: number;
  /** HTTP status the emulator answered with (200, or 429 when rate limited). */
  status: number;
  ok: boolean;
  error?: string;
}

export interface ResponseUrlPost {
  /** The response_url id (last path segment). */
  id: string;
  at: number;
  /** What the bot posted, parsed. */
  body: JsonObject;
  response_type: "ephemeral" | "in_channel";
  replace_original: boolean;
  delete_original: boolean;
  text?: string;
  blocks?: Block[];
  /** Whether the emulator accepted it (a response_url allows 5 posts in 30 minutes). */
  ok: boolean;
  error?: string;
}

/** What Slack itself shows for an answer the bot gave in its HTTP acknowledgement. */
export interface AckResponse {
  response_type: "ephemeral" | "in_channel";
  text?: string;
  blocks?: Block[];
}

export interface DeliveryResult {
  /** HTTP status from the bot; 0 when it did not answer within the ack deadline or refused the connection. */
  status: number;
  body: string;
  ackMs: number;
  timedOut: boolean;
  /** Set when the request never got an HTTP answer (connection refused, reset), or no Socket Mode connection was open. */
  networkError?: string;
  /** Over Socket Mode: the envelope that carried it. */
  envelopeId?: string;
  /** Over HTTP: the signed request exactly as it was sent (for `resend`, a replay by whoever captured it). */
  request?: SignedRequest;
}

/** One signed HTTP request to the bot, byte for byte: where it went, its headers and its body. */
export interface SignedRequest {
  endpoint: string;
  headers: Record<string, string>;
  body: string;
}

export interface CommandResult extends DeliveryResult {
  responseUrl: string;
  triggerId: string;
  /** The immediate answer carried by the ack body, if any (Slack shows it like a response_url post). */
  ackResponse?: AckResponse;
  /** Posts the bot made to this command's response_url so far. */
  responses(): ResponseUrlPost[];
}

export interface EventResult extends DeliveryResult {
  eventId: string;
}

export interface ActionResult extends DeliveryResult {
  responseUrl: string;
  triggerId: string;
  responses(): ResponseUrlPost[];
}

/** Something a simulated user did, kept so transcripts show it. */
export interface UserAction {
  kind: "command" | "click" | "reaction" | "unreaction";
  channel: string;
  user: string;
  /** "/llm swap …", the button label, or the reaction name. */
  text: string;
  /** The message acted on (click, reaction). */
  messageTs?: string;
  /** For clicks: the first line of the message as it read when clicked. */
  messageSnippet?: string;
  at: number;
  seq: number;
}

export interface EmulatorWarning {
  method: string;
  warning: string;
  at: number;
}

/** What a Socket Mode envelope carries. */
export type SocketEnvelopeType = "slash_commands" | "events_api" | "interactive";

/** Why Slack asks an app to drop a Socket Mode connection. */
export type SocketDisconnectReason =
  | "warning"
  | "refresh_requested"
  | "link_disabled"
  | "too_many_websockets";

/** One Socket Mode connection the app opened. */
export interface SocketConnection {
  /** 1, 2, … in the order they were opened. */
  id: number;
  /** The single-use ticket of the URL it connected with. */
  ticket: string;
  openedAt: number;
  /** When Slack sent `hello` (unset for a connection refused as the 11th). */
  helloAt?: number;
  open: boolean;
  closedAt?: number;
  closeCode?: number;
  /** `app` when the app closed it (after a `disconnect`, or on stop); `slack` for drop(), a lapsed disconnect, stop(). */
  closedBy?: "app" | "slack";
  /** The `disconnect` messages sent on it. */
  disconnects: SocketDisconnectReason[];
  /** Acks received on it. */
  acks: number;
}

/** One envelope sent over Socket Mode, as sent, plus what became of it. */
export interface SocketEnvelope {
  envelope_id: string;
  type: SocketEnvelopeType;
  payload: JsonObject;
  accepts_response_payload: boolean;
  /** events_api only: 0 on the first delivery, then Slack's retry number. */
  retry_attempt?: number;
  /** events_api only: "" on the first delivery, "timeout" on a retry of an unacked one. */
  retry_reason?: string;
  /** The connection (SocketConnection.id) it went out on. */
  connection: number;
  sentAt: number;
  ackedAt?: number;
  ackPayload?: JsonObject;
  /** The ack came after Slack stopped waiting (ackDeadlineMs). */
  late?: boolean;
}
