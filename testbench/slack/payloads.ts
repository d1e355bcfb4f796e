import { randomBytes, randomInt } from "node:crypto";
import type { JsonObject } from "./types.ts";
import type { ChannelState, SlackWorkspace } from "./workspace.ts";

/** Slack trigger ids look like "13345224609.738474920.8088930838d88f008e0". */
export function newTriggerId(): string {
  return `${randomInt(1e9, 1e10)}.${randomInt(1e8, 1e9)}.${randomBytes(16).toString("hex")}`;
}

/** Event ids look like "Ev08MFMKH6"; unique per delivery (retries reuse it). */
export function newEventId(): string {
  return `Ev0${randomBytes(5).toString("hex").toUpperCase()}`;
}

export function newResponseId(teamId: string): string {
  return `${teamId}/${randomInt(1e9, 1e10)}/${randomBytes(12).toString("hex")}`;
}

/**
 * A slash command exactly as Slack form-encodes it (field order as Slack sends it). `team_domain`,
 * `channel_name` and `user_name` are deprecated by Slack but still sent.
 */
export function slashCommandBody(
  ws: SlackWorkspace,
  input: {
    user: string;
    channel: ChannelState;
    command: string;
    text: string;
    responseUrl: string;
    triggerId: string;
  },
): string {
  const form = new URLSearchParams();
  form.set("token", ws.verificationToken);
  form.set("team_id", ws.teamId);
  form.set("team_domain", ws.teamDomain);
  form.set("channel_id", input.channel.id);
  form.set("channel_name", input.channel.isIm ? "directmessage" : input.channel.name);
  form.set("user_id", input.user);
  form.set("user_name", ws.userName(input.user));
  form.set("command", input.command);
  form.set("text", input.text);
  form.set("api_app_id", ws.appId);
  form.set("is_enterprise_install", "false");
  form.set("response_url", input.responseUrl);
  form.set("trigger_id", input.triggerId);
  return form.toString();
}

/** The Events API envelope around one event. */
export function eventEnvelope(ws: SlackWorkspace, event: JsonObject, eventId: string): JsonObject {
  const now = Date.now();
  return {
    token: ws.verificationToken,
    team_id: ws.teamId,
    context_team_id: ws.teamId,
    context_enterprise_id: null,
    api_app_id: ws.appId,
    event: { event_ts: `${(now / 1000).toFixed(6)}`, ...event },
    type: "event_callback",
    event_id: eventId,
    event_time: Math.floor(now / 1000),
    authorizations: [
      {
        enterprise_id: null,
        team_id: ws.teamId,
        user_id: ws.botUserId,
        is_bot: true,
        is_enterprise_install: false,
      },
    ],
    is_ext_shared_channel: false,
    event_context: `4-${Buffer.from(JSON.stringify({ et: event.type, tid: ws.teamId, aid: ws.appId })).toString("base64url")}`,
  };
}

/** A `block_actions` interaction payload for one clicked element. */
export function blockActionsPayload(
  ws: SlackWorkspace,
  input: {
    user: string;
    channel: ChannelState;
    messageTs: string;
    threadTs?: string;
    isEphemeral: boolean;
    /** The message as Slack's API renders it; omitted for ephemeral messages, as Slack does. */
    message?: JsonObject;
    action: JsonObject;
    responseUrl: string;
    triggerId: string;
  },
): JsonObject {
  const container: JsonObject = {
    type: "message",
    message_ts: input.messageTs,
    channel_id: input.channel.id,
    is_ephemeral: input.isEphemeral,
  };
  if (input.threadTs !== undefined) container.thread_ts = input.threadTs;
  const payload: JsonObject = {
    type: "block_actions",
    user: {
      id: input.user,
      username: ws.userName(input.user),
      name: ws.userName(input.user),
      team_id: ws.teamId,
    },
    api_app_id: ws.appId,
    token: ws.verificationToken,
    container,
    trigger_id: input.triggerId,
    team: { id: ws.teamId, domain: ws.teamDomain },
    enterprise: null,
    is_enterprise_install: false,
    channel: { id: input.channel.id, name: input.channel.isIm ? "directmessage" : input.channel.name },
  };
  if (input.message !== undefined) payload.message = input.message;
  payload.state = { values: {} };
  payload.response_url = input.responseUrl;
  payload.actions = [input.action];
  return payload;
}
