import { randomBytes } from "node:crypto";
import type { RateLimiter } from "./rate-limiter.ts";
import type { Block, JsonObject, SlackFile, SlackMessage } from "./types.ts";
import { MESSAGE_TEXT_LIMIT, validateBlocks } from "./validate-blocks.ts";
import { type ChannelState, fileJson, type SlackWorkspace } from "./workspace.ts";

/** An error answer: HTTP 200 with `{ ok: false, error, ...extra }`, as Slack does. */
export class ApiError extends Error {
  constructor(
    readonly error: string,
    readonly extra: JsonObject = {},
  ) {
    super(error);
  }
}

export interface ApiContext {
  ws: SlackWorkspace;
  limiter: RateLimiter;
  /** Base URL of the emulator (for upload URLs and file links). */
  baseUrl: string;
  validTokens: Set<string>;
  /** App-level tokens (`xapp-…`): only app-level methods take them, and they take nothing else. */
  appTokens: Set<string>;
  /** Issues a Socket Mode URL (apps.connections.open); unset until the emulator speaks Socket Mode. */
  openSocket?: () => string;
  /**
   * The bot token's scopes, sent in the `x-oauth-scopes` header of every answer to a call with it (Slack
   * does so even for failed calls: https://api.slack.com/legacy/oauth-scopes#working-with-scopes,
   * zulip/zulip#16788; the format, comma and space separated: slackapi/node-slack-sdk#292). Methods are
   * not refused for a missing scope (no `missing_scope` yet).
   */
  grantedScopes: string[];
}

/** Methods called with the app-level token rather than the bot token. */
const APP_LEVEL_METHODS = new Set(["apps.connections.open"]);

export interface ApiRequest {
  method: string;
  args: JsonObject;
  isJson: boolean;
  authorization: string | undefined;
}

export interface ApiAnswer {
  status: number;
  body: JsonObject;
  headers: Record<string, string>;
}

/** The fault switches' forced answers (fault-switches.ts, ApiFaults): consulted once per call. */
export interface ForcedAnswers {
  take(method: string, args: JsonObject): { error: string; status: number } | undefined;
}

const TEXT_LIMIT = MESSAGE_TEXT_LIMIT;
/** files.getUploadURLExternal: "alt_txt_too_large … longer than the limit of 1000 character". */
const ALT_TEXT_LIMIT = 1000;
const REACTION_NAME = /^[a-z0-9_+'-]+(::skin-tone-[2-6])?$/;

function str(args: JsonObject, key: string): string | undefined {
  const value = args[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return undefined;
}

function bool(args: JsonObject, key: string): boolean {
  const value = args[key];
  return value === true || value === "true" || value === "1" || value === 1;
}

function required(args: JsonObject, key: string, error = "invalid_arguments"): string {
  const value = str(args, key);
  if (value === undefined || value === "") throw new ApiError(error);
  return value;
}

/** JSON-valued argument: form bodies carry it as a JSON string, JSON bodies as the value itself. */
function jsonArg(args: JsonObject, key: string, formatError: string): unknown {
  const value = args[key];
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value !== "string") return value;
  try {
    return JSON.parse(value);
  } catch {
    throw new ApiError(formatError);
  }
}

function blocksArg(args: JsonObject): Block[] | undefined {
  const blocks = jsonArg(args, "blocks", "invalid_blocks_format");
  if (blocks === undefined) return undefined;
  if (!Array.isArray(blocks)) throw new ApiError("invalid_blocks_format");
  const errors = validateBlocks(blocks);
  if (errors.length > 0) {
    throw new ApiError("invalid_blocks", {
      errors,
      response_metadata: { messages: errors.map((e) => `[ERROR] ${e}`) },
    });
  }
  return withBlockIds(blocks as Block[]);
}

/** Slack gives every stored block a block_id; missing ones get a short random id, as Slack does. */
export function withBlockIds(blocks: Block[]): Block[] {
  return blocks.map((block) =>
    typeof block.block_id === "string" ? block : { ...block, block_id: randomBytes(3).toString("base64url") },
  );
}

function attachmentsArg(args: JsonObject): JsonObject[] | undefined {
  const attachments = jsonArg(args, "attachments", "invalid_attachments");
  if (attachments === undefined) return undefined;
  if (!Array.isArray(attachments)) throw new ApiError("invalid_attachments");
  return attachments as JsonObject[];
}

function metadataArg(args: JsonObject): JsonObject | undefined {
  const metadata = jsonArg(args, "metadata", "invalid_metadata_format");
  if (metadata === undefined) return undefined;
  if (typeof metadata !== "object" || metadata === null) throw new ApiError("invalid_metadata_format");
  return metadata as JsonObject;
}

function channelArg(ctx: ApiContext, args: JsonObject, key = "channel"): ChannelState {
  const ref = str(args, key);
  if (ref === undefined || ref === "") throw new ApiError("channel_not_found");
  const channel = ctx.ws.resolveChannel(ref);
  if (channel === undefined) throw new ApiError("channel_not_found");
  return channel;
}

/**
 * The message a method acts on. A deleted one is `message_not_found`, like a ts that never existed — its
 * tombstone too, when it had replies (what Slack answers for a tombstone is not documented; see README).
 */
function messageArg(ctx: ApiContext, channel: ChannelState, ts: string | undefined): SlackMessage {
  if (ts === undefined) throw new ApiError("message_not_found");
  const message = ctx.ws.findLiveMessage(channel.id, ts);
  if (message === undefined) throw new ApiError("message_not_found");
  return message;
}

function checkText(method: string, ctx: ApiContext, text: string | undefined, hasOther: boolean): void {
  if ((text === undefined || text === "") && !hasOther) throw new ApiError("no_text");
  if (text !== undefined && text.length > TEXT_LIMIT) throw new ApiError("msg_too_long");
  if ((text === undefined || text === "") && hasOther) {
    ctx.ws.warn(method, "missing_text_fallback: blocks/attachments without a top-level text fallback");
  }
}

function checkThread(
  method: string,
  ctx: ApiContext,
  channel: ChannelState,
  threadTs: string | undefined,
): void {
  if (threadTs === undefined) return;
  const parent = ctx.ws.findMessage(channel.id, threadTs);
  if (parent === undefined) ctx.ws.warn(method, `thread_ts_not_found: ${threadTs} in ${channel.id}`);
  else if (parent.thread_ts !== undefined && parent.thread_ts !== parent.ts) {
    ctx.ws.warn(method, `thread_ts_is_a_reply: ${threadTs} is itself a reply in ${parent.thread_ts}`);
  }
}

function userJson(ctx: ApiContext, id: string): JsonObject {
  const user = ctx.ws.users.get(id);
  if (user === undefined) throw new ApiError("user_not_found");
  const tz = user.tz ?? "UTC";
  const realName = user.realName ?? user.name;
  return {
    id: user.id,
    team_id: ctx.ws.teamId,
    name: user.name,
    deleted: false,
    real_name: realName,
    tz,
    tz_label: tz,
    tz_offset: 0,
    is_admin: user.isAdmin ?? false,
    is_owner: false,
    is_bot: user.isBot ?? false,
    is_app_user: false,
    updated: Math.floor(Date.now() / 1000),
    profile: {
      real_name: realName,
      display_name: user.name,
      real_name_normalized: realName,
      display_name_normalized: user.name,
      team: ctx.ws.teamId,
      ...(user.id === ctx.ws.botUserId ? { bot_id: ctx.ws.botId, api_app_id: ctx.ws.appId } : {}),
    },
  };
}

/**
 * One page of messages, as conversations.replies and .history answer: `limit` of them from the cursor on,
 * `has_more` and the next cursor; a message's metadata only when `include_all_metadata` asked for it.
 */
function pageOf(
  ctx: ApiContext,
  args: JsonObject,
  all: SlackMessage[],
  max: number,
  byDefault = max,
): JsonObject {
  const limit = Math.max(1, Math.min(max, Number(str(args, "limit") ?? String(byDefault)) || byDefault));
  const cursor = str(args, "cursor");
  let offset = 0;
  if (cursor !== undefined && cursor !== "") {
    const decoded = Buffer.from(cursor, "base64").toString("utf8");
    const match = /^offset:(\d+)$/.exec(decoded);
    if (match === null) throw new ApiError("invalid_cursor");
    offset = Number(match[1]);
  }
  const withMetadata = bool(args, "include_all_metadata");
  const page = all.slice(offset, offset + limit).map((m) => {
    const json = ctx.ws.messageJson(m);
    if (!withMetadata) delete json.metadata;
    return json;
  });
  const hasMore = offset + limit < all.length;
  return {
    messages: page,
    has_more: hasMore,
    ...(hasMore
      ? { response_metadata: { next_cursor: Buffer.from(`offset:${offset + limit}`).toString("base64") } }
      : {}),
  };
}

function channelJson(ctx: ApiContext, channel: ChannelState): JsonObject {
  return {
    id: channel.id,
    name: channel.name,
    is_channel: !channel.isPrivate && !channel.isIm,
    is_group: channel.isPrivate && !channel.isIm,
    is_im: channel.isIm,
    is_mpim: false,
    is_private: channel.isPrivate,
    is_archived: false,
    is_general: false,
    is_member: channel.botIsMember,
    created: channel.created,
    creator: channel.imUser ?? ctx.ws.botUserId,
    ...(channel.isIm ? { user: channel.imUser } : {}),
    topic: { value: "", creator: "", last_set: 0 },
    purpose: { value: "", creator: "", last_set: 0 },
    context_team_id: ctx.ws.teamId,
  };
}

function permalink(ctx: ApiContext, message: SlackMessage): string {
  const base = `https://${ctx.ws.teamDomain}.slack.com/archives/${message.channel}/p${message.ts.replace(".", "")}`;
  if (message.thread_ts !== undefined && message.thread_ts !== message.ts) {
    return `${base}?thread_ts=${message.thread_ts}&cid=${message.channel}`;
  }
  return base;
}

function mimetypeFor(name: string): { mimetype: string; filetype: string } {
  const ext = name.toLowerCase().split(".").pop() ?? "";
  const known: Record<string, string> = {
    png: "image/png",
    jpg: "image/jpeg",
    jpeg: "image/jpeg",
    gif: "image/gif",
    svg: "image/svg+xml",
    txt: "text/plain",
    log: "text/plain",
    csv: "text/csv",
    json: "application/json",
    md: "text/markdown",
    pdf: "application/pdf",
  };
  const mimetype = known[ext];
  if (mimetype === undefined) return { mimetype: "application/octet-stream", filetype: "binary" };
  return { mimetype, filetype: ext === "txt" || ext === "log" ? "text" : ext };
}

/** Width and height from a PNG's IHDR, or undefined when the bytes are not a PNG. */
export function pngSize(bytes: Buffer): { width: number; height: number } | undefined {
  const signature = "89504e470d0a1a0a";
  if (bytes.length < 24 || bytes.subarray(0, 8).toString("hex") !== signature) return undefined;
  if (bytes.subarray(12, 16).toString("latin1") !== "IHDR") return undefined;
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

type Handler = (ctx: ApiContext, args: JsonObject, method: string) => JsonObject;

const handlers: Record<string, Handler> = {
  "apps.connections.open": (ctx) => {
    if (ctx.openSocket === undefined) throw new ApiError("invalid_auth");
    return { url: ctx.openSocket() };
  },

  "auth.test": (ctx) => ({
    url: `https://${ctx.ws.teamDomain}.slack.com/`,
    team: ctx.ws.teamName,
    user: ctx.ws.botName,
    team_id: ctx.ws.teamId,
    user_id: ctx.ws.botUserId,
    bot_id: ctx.ws.botId,
    is_enterprise_install: false,
  }),

  "chat.postMessage": (ctx, args, method) => {
    const channel = channelArg(ctx, args);
    if (!channel.botIsMember) throw new ApiError("not_in_channel");
    const blocks = blocksArg(args);
    const attachments = attachmentsArg(args);
    const metadata = metadataArg(args);
    const text = str(args, "text");
    checkText(method, ctx, text, blocks !== undefined || attachments !== undefined);
    let threadTs = str(args, "thread_ts") || undefined;
    if (
      threadTs !== undefined &&
      ctx.ws.findMessage(channel.id, threadTs) === undefined &&
      ctx.ws.wasDeleted(channel.id, threadTs)
    ) {
      // The parent was deleted and left no tombstone (it had no replies): Slack does not fail the call, it
      // "silently un-threads the reply into a top-level channel message", and the answer's `message` has
      // no thread_ts (slack-go/slack#1571; also slackapi/python-slack-events-api#87, PostHog/posthog#83601).
      // Under a tombstone the reply stays in the thread (not settled by any source; see README).
      ctx.ws.warn(
        method,
        `thread_ts_deleted: ${threadTs} in ${channel.id} was deleted; posted to the channel`,
      );
      threadTs = undefined;
    } else {
      checkThread(method, ctx, channel, threadTs);
    }
    const message = ctx.ws.post({
      channel: channel.id,
      user: ctx.ws.botUserId,
      text: text ?? "",
      ...(blocks !== undefined ? { blocks } : {}),
      ...(attachments !== undefined ? { attachments } : {}),
      ...(metadata !== undefined ? { metadata } : {}),
      ...(threadTs !== undefined ? { thread_ts: threadTs } : {}),
      reply_broadcast: bool(args, "reply_broadcast"),
      source: "api",
      fromBot: true,
    });
    return { channel: channel.id, ts: message.ts, message: ctx.ws.messageJson(message) };
  },

  "chat.update": (ctx, args, method) => {
    const channel = channelArg(ctx, args);
    const message = messageArg(ctx, channel, str(args, "ts"));
    if (message.user !== ctx.ws.botUserId) throw new ApiError("cant_update_message");
    const blocks = blocksArg(args);
    const attachments = attachmentsArg(args);
    const metadata = metadataArg(args);
    const text = str(args, "text");
    if (text === undefined && blocks === undefined && attachments === undefined)
      throw new ApiError("no_text");
    if (text !== undefined && text.length > TEXT_LIMIT) throw new ApiError("msg_too_long");
    if ((text === undefined || text === "") && blocks !== undefined && blocks.length > 0) {
      ctx.ws.warn(method, "missing_text_fallback: blocks without a top-level text fallback");
    }
    ctx.ws.update(message, {
      ...(text !== undefined ? { text } : blocks !== undefined ? { text: "" } : {}),
      ...(blocks !== undefined ? { blocks } : {}),
      ...(attachments !== undefined ? { attachments } : {}),
      ...(metadata !== undefined ? { metadata } : {}),
    });
    if (bool(args, "reply_broadcast") && message.thread_ts !== undefined) {
      message.reply_broadcast = true;
      message.subtype = "thread_broadcast";
    }
    const json = ctx.ws.messageJson(message);
    return { channel: channel.id, ts: message.ts, text: message.text, message: json };
  },

  "chat.postEphemeral": (ctx, args, method) => {
    const channel = channelArg(ctx, args);
    const user = required(args, "user", "user_not_in_channel");
    if (!ctx.ws.users.has(user) || user === ctx.ws.botUserId) throw new ApiError("user_not_in_channel");
    if (!channel.botIsMember) throw new ApiError("not_in_channel");
    const blocks = blocksArg(args);
    const attachments = attachmentsArg(args);
    const text = str(args, "text");
    checkText(method, ctx, text, blocks !== undefined || attachments !== undefined);
    const threadTs = str(args, "thread_ts") || undefined;
    const ephemeral = ctx.ws.addEphemeral({
      from: "bot",
      channel: channel.id,
      user,
      text: text ?? "",
      ...(threadTs !== undefined ? { thread_ts: threadTs } : {}),
      ...(blocks !== undefined ? { blocks } : {}),
      ...(attachments !== undefined ? { attachments } : {}),
      source: "api",
    });
    return { message_ts: ephemeral.ts };
  },

  "chat.delete": (ctx, args) => {
    const channel = channelArg(ctx, args);
    const message = messageArg(ctx, channel, str(args, "ts"));
    if (message.user !== ctx.ws.botUserId) throw new ApiError("cant_delete_message");
    ctx.ws.remove(message);
    return { channel: channel.id, ts: message.ts };
  },

  "chat.getPermalink": (ctx, args) => {
    const channel = channelArg(ctx, args);
    const message = messageArg(ctx, channel, str(args, "message_ts"));
    return { channel: channel.id, permalink: permalink(ctx, message) };
  },

  "reactions.add": (ctx, args) => {
    const channel = channelArg(ctx, args);
    const name = required(args, "name", "invalid_name");
    if (!REACTION_NAME.test(name)) throw new ApiError("invalid_name");
    const message = messageArg(ctx, channel, str(args, "timestamp"));
    if (ctx.ws.addReaction(message, ctx.ws.botUserId, name) === "already_reacted") {
      throw new ApiError("already_reacted");
    }
    return {};
  },

  "reactions.remove": (ctx, args) => {
    const channel = channelArg(ctx, args);
    const name = required(args, "name", "invalid_name");
    const message = messageArg(ctx, channel, str(args, "timestamp"));
    if (ctx.ws.removeReaction(message, ctx.ws.botUserId, name) === "no_reaction") {
      throw new ApiError("no_reaction");
    }
    return {};
  },

  "reactions.get": (ctx, args) => {
    const channel = channelArg(ctx, args);
    const message = messageArg(ctx, channel, str(args, "timestamp"));
    const json = ctx.ws.messageJson(message);
    json.permalink = permalink(ctx, message);
    return { type: "message", channel: channel.id, message: json };
  },

  "users.info": (ctx, args) => ({ user: userJson(ctx, required(args, "user", "user_not_found")) }),

  "usergroups.list": (ctx, args) => {
    const includeUsers = bool(args, "include_users");
    const includeCount = bool(args, "include_count");
    return {
      usergroups: ctx.ws.userGroups.map((group) => ({
        id: group.id,
        team_id: ctx.ws.teamId,
        is_usergroup: true,
        is_subteam: true,
        name: group.name ?? group.handle,
        description: "",
        handle: group.handle,
        is_external: false,
        date_create: 1_700_000_000,
        date_update: 1_700_000_000,
        date_delete: 0,
        auto_type: null,
        created_by: ctx.ws.botUserId,
        prefs: { channels: [], groups: [] },
        ...(includeUsers ? { users: [...group.users] } : {}),
        ...(includeCount || includeUsers ? { user_count: group.users.length } : {}),
      })),
    };
  },

  "usergroups.users.list": (ctx, args) => {
    const id = required(args, "usergroup", "no_such_subteam");
    const group = ctx.ws.userGroups.find((g) => g.id === id);
    if (group === undefined) throw new ApiError("no_such_subteam");
    return { users: [...group.users] };
  },

  "conversations.info": (ctx, args) => ({ channel: channelJson(ctx, channelArg(ctx, args)) }),

  "conversations.replies": (ctx, args) => {
    const channel = channelArg(ctx, args);
    const ts = str(args, "ts");
    if (ts === undefined) throw new ApiError("thread_not_found");
    const parent = ctx.ws.findMessage(channel.id, ts);
    if (parent === undefined) throw new ApiError("thread_not_found");
    return pageOf(ctx, args, [parent, ...ctx.ws.replies(channel.id, ts)], 1000);
  },

  // docs.slack.dev/reference/methods/conversations.history: newest first; `oldest`/`latest` bound the
  // range (exclusive unless `inclusive`), `limit` default 100 (max 999), cursor paging; metadata only with
  // include_all_metadata. Thread replies are not in a channel's history, but for those broadcast to it.
  "conversations.history": (ctx, args) => {
    const channel = channelArg(ctx, args);
    const oldest = Number(str(args, "oldest") ?? "0");
    const latest = Number(str(args, "latest") ?? "Infinity");
    const inclusive = bool(args, "inclusive");
    const inRange = (ts: number) => (inclusive ? ts >= oldest && ts <= latest : ts > oldest && ts < latest);
    const all = ctx.ws
      .topLevel(channel.id)
      .filter((m) => inRange(Number(m.ts)))
      .reverse();
    return pageOf(ctx, args, all, 999, 100);
  },

  "files.getUploadURLExternal": (ctx, args) => {
    const filename = required(args, "filename");
    const length = Number(required(args, "length"));
    if (!Number.isInteger(length) || length < 0) throw new ApiError("invalid_arguments");
    // Slack: "missing_argument … typically only occurs when the length provided is 0"
    if (length === 0) throw new ApiError("missing_argument");
    const id = `F${randomBytes(5).toString("hex").toUpperCase()}`;
    const { mimetype, filetype } = mimetypeFor(filename);
    // documented as alt_txt; WebClient.filesUploadV2 sends alt_text
    const alt = str(args, "alt_txt") ?? str(args, "alt_text");
    if (alt !== undefined && alt.length > ALT_TEXT_LIMIT) throw new ApiError("alt_txt_too_large");
    const file: SlackFile = {
      id,
      name: filename,
      title: filename,
      mimetype,
      filetype,
      size: length,
      user: ctx.ws.botUserId,
      created: Math.floor(Date.now() / 1000),
      url_private: `${ctx.baseUrl}/files/${id}/${encodeURIComponent(filename)}`,
      permalink: `https://${ctx.ws.teamDomain}.slack.com/files/${ctx.ws.botUserId}/${id}/${encodeURIComponent(filename)}`,
      ...(alt !== undefined ? { alt_text: alt } : {}),
    };
    ctx.ws.uploads.set(id, { file, length, uploaded: false });
    return { upload_url: `${ctx.baseUrl}/upload/v1/${id}`, file_id: id };
  },

  "files.completeUploadExternal": (ctx, args, method) => {
    const files = jsonArg(args, "files", "invalid_arguments");
    if (!Array.isArray(files) || files.length === 0) throw new ApiError("invalid_arguments");
    const done: SlackFile[] = [];
    for (const entry of files) {
      const id = typeof entry === "object" && entry !== null ? (entry as JsonObject).id : undefined;
      const upload = typeof id === "string" ? ctx.ws.uploads.get(id) : undefined;
      if (upload === undefined || !upload.uploaded) throw new ApiError("file_not_found");
      const title = (entry as JsonObject).title;
      if (typeof title === "string" && title !== "") upload.file.title = title;
      const size = upload.file.content === undefined ? undefined : pngSize(upload.file.content);
      if (size !== undefined) {
        upload.file.original_w = size.width;
        upload.file.original_h = size.height;
      }
      done.push(upload.file);
    }
    const channelRef = str(args, "channel_id") ?? str(args, "channels");
    if (channelRef !== undefined && channelRef !== "") {
      const channel = ctx.ws.resolveChannel(channelRef);
      if (channel === undefined) throw new ApiError("channel_not_found");
      if (!channel.botIsMember) throw new ApiError("not_in_channel");
      const threadTs = str(args, "thread_ts") || undefined;
      checkThread(method, ctx, channel, threadTs);
      const comment = str(args, "initial_comment");
      if (comment !== undefined && comment.length > TEXT_LIMIT) throw new ApiError("msg_too_long");
      // Slack: "If the initial_comment field is provided, the blocks field is ignored"
      const blocks = comment === undefined || comment === "" ? blocksArg(args) : undefined;
      ctx.ws.post({
        channel: channel.id,
        user: ctx.ws.botUserId,
        text: comment ?? "",
        files: done,
        ...(blocks !== undefined ? { blocks } : {}),
        ...(threadTs !== undefined ? { thread_ts: threadTs } : {}),
        source: "upload",
        fromBot: true,
      });
    }
    return { files: done.map((f) => fileJson(f)) };
  },
};

export const SUPPORTED_METHODS: readonly string[] = Object.keys(handlers);

function bearer(authorization: string | undefined): string | undefined {
  if (authorization === undefined) return undefined;
  const match = /^Bearer\s+(\S+)$/i.exec(authorization.trim());
  return match?.[1];
}

/**
 * One Web API call, start to end: authentication, forced failures (failNext, outages), rate limits,
 * then the method.
 * Errors are HTTP 200 `{ok:false}`; rate limits are HTTP 429 with Retry-After, as on slack.com.
 */
export function handleApiCall(ctx: ApiContext, req: ApiRequest, forced: ForcedAnswers): ApiAnswer {
  const headerToken = bearer(req.authorization);
  const bodyToken = req.isJson ? undefined : str(req.args, "token");
  const token = headerToken ?? bodyToken;
  if (token === undefined) return { status: 200, body: { ok: false, error: "not_authed" }, headers: {} };
  const appLevel = APP_LEVEL_METHODS.has(req.method);
  const [own, other] = appLevel ? [ctx.appTokens, ctx.validTokens] : [ctx.validTokens, ctx.appTokens];
  if (other.has(token))
    return { status: 200, body: { ok: false, error: "not_allowed_token_type" }, headers: {} };
  if (!own.has(token)) return { status: 200, body: { ok: false, error: "invalid_auth" }, headers: {} };
  const answer = answerCall(ctx, req, forced);
  if (appLevel) return answer;
  return { ...answer, headers: { ...answer.headers, "x-oauth-scopes": ctx.grantedScopes.join(", ") } };
}

function answerCall(ctx: ApiContext, req: ApiRequest, forced: ForcedAnswers): ApiAnswer {
  const handler = handlers[req.method];
  if (handler === undefined)
    return { status: 200, body: { ok: false, error: "unknown_method" }, headers: {} };

  const failure = forced.take(req.method, req.args);
  if (failure !== undefined) {
    return { status: failure.status, body: { ok: false, error: failure.error }, headers: {} };
  }

  let rateChannel: string | undefined;
  if (req.method === "chat.postMessage") {
    const ref = str(req.args, "channel");
    rateChannel = ref === undefined ? undefined : (ctx.ws.resolveChannel(ref)?.id ?? ref);
  }
  const decision = ctx.limiter.check(req.method, rateChannel);
  if (!decision.allowed) {
    return {
      status: 429,
      body: { ok: false, error: "ratelimited" },
      headers: { "retry-after": String(decision.retryAfterSec) },
    };
  }

  try {
    const result = handler(ctx, req.args, req.method);
    return { status: 200, body: { ok: true, ...result }, headers: {} };
  } catch (error) {
    if (error instanceof ApiError) {
      return { status: 200, body: { ok: false, error: error.error, ...error.extra }, headers: {} };
    }
    return {
      status: 200,
      body: { ok: false, error: "internal_error", detail: String(error) },
      headers: {},
    };
  }
}
