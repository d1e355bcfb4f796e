import { TsClock } from "./ts-clock.ts";
import type {
  ApiCall,
  Block,
  EmulatorWarning,
  EphemeralMessage,
  JsonObject,
  SlackChannelConfig,
  SlackEmulatorOptions,
  SlackFile,
  SlackMessage,
  SlackUserConfig,
  SlackUserGroupConfig,
  UserAction,
} from "./types.ts";

export interface ChannelState {
  id: string;
  name: string;
  isPrivate: boolean;
  isIm: boolean;
  /** For a DM: the other member. */
  imUser?: string;
  botIsMember: boolean;
  created: number;
}

/** What a response_url belongs to: the command or the click that produced it. */
export interface ResponseUrlState {
  id: string;
  kind: "command" | "block_actions";
  channel: string;
  user: string;
  /** For clicks: the message the button was on. */
  messageTs?: string;
  /** For clicks on an ephemeral message. */
  ephemeral?: EphemeralMessage;
  uses: number;
  createdAt: number;
}

export interface PendingUpload {
  file: SlackFile;
  length: number;
  uploaded: boolean;
}

export interface NewMessage {
  channel: string;
  user: string;
  text: string;
  blocks?: Block[];
  attachments?: JsonObject[];
  files?: SlackFile[];
  metadata?: JsonObject;
  thread_ts?: string;
  reply_broadcast?: boolean;
  source: SlackMessage["source"];
  /** Messages by people (not the bot) carry no bot_id/app_id. */
  fromBot: boolean;
}

const CHANNEL_ID = /^[CGD][A-Z0-9]{2,}$/;

/** Slackbot's user id: the author of tombstones. */
export const SLACKBOT_USER_ID = "USLACKBOT";
/** What a deleted thread parent shows. */
export const TOMBSTONE_TEXT = "This message was deleted.";

/** A deleted thread parent that still has replies (Slack's `subtype: "tombstone"`). */
export function isTombstone(message: SlackMessage): boolean {
  return message.subtype === "tombstone";
}

/** All state of the emulated workspace: people, channels, messages, files and the call log. */
export class SlackWorkspace {
  readonly teamId: string;
  readonly teamDomain: string;
  readonly teamName: string;
  readonly botUserId: string;
  readonly botId: string;
  readonly botName: string;
  readonly appId: string;
  readonly verificationToken: string;
  readonly users = new Map<string, SlackUserConfig>();
  readonly userGroups: SlackUserGroupConfig[];
  readonly calls: ApiCall[] = [];
  readonly warnings: EmulatorWarning[] = [];
  readonly ephemerals: EphemeralMessage[] = [];
  readonly userActions: UserAction[] = [];
  readonly deleted: SlackMessage[] = [];
  readonly uploads = new Map<string, PendingUpload>();
  readonly responseUrls = new Map<string, ResponseUrlState>();
  readonly clock = new TsClock();
  private readonly channels = new Map<string, ChannelState>();
  private readonly strictChannels: boolean;
  private readonly messagesByChannel = new Map<string, SlackMessage[]>();
  private seq = 0;

  constructor(opts: SlackEmulatorOptions) {
    this.teamId = opts.teamId ?? "T0TESTTEAM";
    this.teamDomain = opts.teamDomain ?? "modelswap-test";
    this.teamName = opts.teamName ?? "modelswap test";
    this.botUserId = opts.botUserId ?? "U0BOTUSER1";
    this.botId = opts.botId ?? "B0BOTID001";
    this.botName = opts.botName ?? "modelswap";
    this.appId = opts.appId ?? "A0MODELSWP";
    this.verificationToken = opts.verificationToken ?? "verification-token-deprecated";
    for (const user of opts.users ?? []) this.users.set(user.id, user);
    this.users.set(this.botUserId, {
      id: this.botUserId,
      name: this.botName,
      realName: this.botName,
      isBot: true,
    });
    this.userGroups = opts.userGroups ?? [];
    this.strictChannels = opts.channels !== undefined;
    for (const channel of opts.channels ?? []) this.addChannel(channel);
  }

  nextSeq(): number {
    this.seq += 1;
    return this.seq;
  }

  addChannel(config: SlackChannelConfig): ChannelState {
    const state: ChannelState = {
      id: config.id,
      name: config.name.replace(/^#/, ""),
      isPrivate: config.isPrivate ?? config.id.startsWith("G"),
      isIm: false,
      botIsMember: config.botIsMember ?? true,
      created: Math.floor(Date.now() / 1000),
    };
    this.channels.set(state.id, state);
    return state;
  }

  /**
   * A channel by id, "#name"/"name", or a user id (the DM with that user, as chat.postMessage allows).
   * Without configured channels, well-formed unknown ids are created on first use.
   */
  resolveChannel(ref: string): ChannelState | undefined {
    const byId = this.channels.get(ref);
    if (byId !== undefined) return byId;
    const name = ref.replace(/^#/, "");
    for (const channel of this.channels.values()) {
      if (!channel.isIm && channel.name === name) return channel;
    }
    if (/^[UW][A-Z0-9]{2,}$/.test(ref) && this.users.has(ref)) return this.openIm(ref);
    if (!this.strictChannels && CHANNEL_ID.test(ref)) {
      return this.addChannel({ id: ref, name: ref.toLowerCase() });
    }
    return undefined;
  }

  openIm(userId: string): ChannelState {
    const id = `D${userId.slice(1)}`;
    const existing = this.channels.get(id);
    if (existing !== undefined) return existing;
    const state: ChannelState = {
      id,
      name: id,
      isPrivate: true,
      isIm: true,
      imUser: userId,
      botIsMember: true,
      created: Math.floor(Date.now() / 1000),
    };
    this.channels.set(id, state);
    return state;
  }

  knownChannels(): ChannelState[] {
    return [...this.channels.values()];
  }

  userName(id: string): string {
    return this.users.get(id)?.name ?? id;
  }

  /** Every message of a channel, replies included, in posting order. */
  allMessages(channelId: string): SlackMessage[] {
    let list = this.messagesByChannel.get(channelId);
    if (list === undefined) {
      list = [];
      this.messagesByChannel.set(channelId, list);
    }
    return list;
  }

  /** The message at `ts` as the channel shows it: a tombstone for a deleted parent that has replies. */
  findMessage(channelId: string, ts: string): SlackMessage | undefined {
    return this.messagesByChannel.get(channelId)?.find((m) => m.ts === ts);
  }

  /** The message at `ts` unless it was deleted (tombstones included): what the Web API can act on. */
  findLiveMessage(channelId: string, ts: string): SlackMessage | undefined {
    const message = this.findMessage(channelId, ts);
    return message === undefined || isTombstone(message) ? undefined : message;
  }

  /** Whether `ts` in that channel was a message that has been deleted (by chat.delete, an admin, …). */
  wasDeleted(channelId: string, ts: string): boolean {
    return this.deleted.some((m) => m.channel === channelId && m.ts === ts);
  }

  /** Channel view: top-level messages plus replies broadcast to the channel. */
  topLevel(channelId: string): SlackMessage[] {
    return this.allMessages(channelId).filter(
      (m) => m.thread_ts === undefined || m.thread_ts === m.ts || m.reply_broadcast === true,
    );
  }

  /** The replies of a thread, oldest first (the parent is not included). */
  replies(channelId: string, threadTs: string): SlackMessage[] {
    return this.allMessages(channelId).filter((m) => m.thread_ts === threadTs && m.ts !== threadTs);
  }

  post(input: NewMessage): SlackMessage {
    const message: SlackMessage = {
      type: "message",
      channel: input.channel,
      ts: this.clock.next(),
      user: input.user,
      team: this.teamId,
      text: input.text,
      reactions: [],
      edits: 0,
      history: [],
      source: input.source,
      postedAt: Date.now(),
      seq: this.nextSeq(),
    };
    if (input.fromBot) {
      message.bot_id = this.botId;
      message.app_id = this.appId;
    }
    if (input.thread_ts !== undefined) message.thread_ts = input.thread_ts;
    if (input.reply_broadcast === true && input.thread_ts !== undefined) {
      message.reply_broadcast = true;
      message.subtype = "thread_broadcast";
    }
    if (input.blocks !== undefined) message.blocks = input.blocks;
    if (input.attachments !== undefined) message.attachments = input.attachments;
    if (input.files !== undefined) message.files = input.files;
    if (input.metadata !== undefined) message.metadata = input.metadata;
    this.allMessages(input.channel).push(message);
    return message;
  }

  /** chat.update semantics: given fields replace, omitted blocks/attachments/text are kept. */
  update(
    message: SlackMessage,
    change: { text?: string; blocks?: Block[]; attachments?: JsonObject[]; metadata?: JsonObject },
  ): void {
    const previous: SlackMessage["history"][number] = { at: Date.now(), text: message.text };
    if (message.blocks !== undefined) previous.blocks = message.blocks;
    message.history.push(previous);
    if (change.text !== undefined) message.text = change.text;
    if (change.blocks !== undefined) {
      if (change.blocks.length === 0) delete message.blocks;
      else message.blocks = change.blocks;
    }
    if (change.attachments !== undefined) {
      if (change.attachments.length === 0) delete message.attachments;
      else message.attachments = change.attachments;
    }
    if (change.metadata !== undefined) message.metadata = change.metadata;
    message.edits += 1;
  }

  /**
   * Deletes a message as Slack does (chat.delete, a workspace admin, a response_url's delete_original).
   * The original goes to `deleted`. A thread parent that has replies is replaced by a tombstone — Slackbot's
   * "This message was deleted.", `subtype: "tombstone"` — and its replies stay (hackclub/toriel#238 shows
   * the tombstone object; openclaw/openclaw#22035 and 42wim/matterbridge#600: the replies are left in the
   * thread). Any other message disappears. When the last reply under a tombstone goes, the tombstone goes
   * too: Slack then sends `message_deleted` whose `previous_message` is the tombstone with
   * `reply_count: 0` (slack-edge/slack-edge#10).
   */
  remove(message: SlackMessage): "tombstoned" | "removed" {
    const list = this.allMessages(message.channel);
    const index = list.indexOf(message);
    if (index < 0) return "removed";
    this.deleted.push(message);
    const isReply = message.thread_ts !== undefined && message.thread_ts !== message.ts;
    if (!isReply && this.replies(message.channel, message.ts).length > 0) {
      list[index] = this.tombstone(message);
      return "tombstoned";
    }
    list.splice(index, 1);
    if (isReply) {
      const parent = this.findMessage(message.channel, message.thread_ts as string);
      if (
        parent !== undefined &&
        isTombstone(parent) &&
        this.replies(parent.channel, parent.ts).length === 0
      ) {
        list.splice(list.indexOf(parent), 1);
      }
    }
    return "removed";
  }

  /** What stays of a deleted thread parent: Slackbot's placeholder at the same ts, nothing of the original. */
  private tombstone(original: SlackMessage): SlackMessage {
    return {
      type: "message",
      subtype: "tombstone",
      channel: original.channel,
      ts: original.ts,
      user: SLACKBOT_USER_ID,
      team: this.teamId,
      text: TOMBSTONE_TEXT,
      reactions: [],
      edits: 0,
      history: [],
      source: "slack",
      postedAt: original.postedAt,
      seq: original.seq,
    };
  }

  addReaction(message: SlackMessage, user: string, name: string): "ok" | "already_reacted" {
    let reaction = message.reactions.find((r) => r.name === name);
    if (reaction === undefined) {
      reaction = { name, users: [], count: 0 };
      message.reactions.push(reaction);
    }
    if (reaction.users.includes(user)) return "already_reacted";
    reaction.users.push(user);
    reaction.count = reaction.users.length;
    return "ok";
  }

  removeReaction(message: SlackMessage, user: string, name: string): "ok" | "no_reaction" {
    const reaction = message.reactions.find((r) => r.name === name);
    if (reaction === undefined || !reaction.users.includes(user)) return "no_reaction";
    reaction.users = reaction.users.filter((u) => u !== user);
    reaction.count = reaction.users.length;
    if (reaction.count === 0) message.reactions = message.reactions.filter((r) => r !== reaction);
    return "ok";
  }

  addEphemeral(input: Omit<EphemeralMessage, "ts" | "at" | "seq" | "edits">): EphemeralMessage {
    const ephemeral: EphemeralMessage = {
      ...input,
      ts: this.clock.next(),
      edits: 0,
      at: Date.now(),
      seq: this.nextSeq(),
    };
    this.ephemerals.push(ephemeral);
    return ephemeral;
  }

  recordAction(action: Omit<UserAction, "at" | "seq">): void {
    this.userActions.push({ ...action, at: Date.now(), seq: this.nextSeq() });
  }

  warn(method: string, warning: string): void {
    this.warnings.push({ method, warning, at: Date.now() });
  }

  /** A message as Slack's API returns it (reply counts on parents, no emulator bookkeeping). */
  messageJson(message: SlackMessage): JsonObject {
    if (isTombstone(message)) return this.tombstoneJson(message);
    const json: JsonObject = { type: "message" };
    if (message.subtype !== undefined) json.subtype = message.subtype;
    json.text = message.text;
    json.user = message.user;
    if (message.bot_id !== undefined) {
      json.bot_id = message.bot_id;
      json.app_id = message.app_id;
      json.bot_profile = {
        id: message.bot_id,
        app_id: message.app_id,
        name: this.botName,
        deleted: false,
        team_id: this.teamId,
      };
    }
    json.ts = message.ts;
    json.team = message.team;
    if (message.blocks !== undefined) json.blocks = message.blocks;
    if (message.attachments !== undefined) json.attachments = message.attachments;
    if (message.files !== undefined) json.files = message.files.map((f) => fileJson(f));
    if (message.metadata !== undefined) json.metadata = message.metadata;
    if (message.edits > 0) json.edited = { user: message.user, ts: message.ts };
    const replies = this.replies(message.channel, message.ts);
    if (message.thread_ts !== undefined && message.thread_ts !== message.ts) {
      json.thread_ts = message.thread_ts;
      const parent = this.findMessage(message.channel, message.thread_ts);
      if (parent !== undefined) json.parent_user_id = parent.user;
    } else if (replies.length > 0) {
      const replyUsers = [...new Set(replies.map((r) => r.user))];
      json.thread_ts = message.ts;
      json.reply_count = replies.length;
      json.reply_users_count = replyUsers.length;
      json.latest_reply = replies[replies.length - 1]?.ts;
      json.reply_users = replyUsers;
    }
    if (message.reactions.length > 0) {
      json.reactions = message.reactions.map((r) => ({ name: r.name, users: [...r.users], count: r.count }));
    }
    return json;
  }

  /** A tombstone as conversations.replies / .history return it (the object in hackclub/toriel#238). */
  private tombstoneJson(message: SlackMessage): JsonObject {
    const replies = this.replies(message.channel, message.ts);
    const replyUsers = [...new Set(replies.map((r) => r.user))];
    return {
      subtype: "tombstone",
      text: TOMBSTONE_TEXT,
      user: SLACKBOT_USER_ID,
      hidden: true,
      type: "message",
      ts: message.ts,
      thread_ts: message.ts,
      parent_user_id: SLACKBOT_USER_ID,
      reply_count: replies.length,
      reply_users_count: replyUsers.length,
      latest_reply: replies[replies.length - 1]?.ts ?? "0000000000.000000",
      reply_users: replyUsers,
      is_locked: false,
      subscribed: false,
    };
  }
}

/** A file object as Slack returns it (without the bytes). */
export function fileJson(file: SlackFile): JsonObject {
  const { content: _content, ...rest } = file;
  return { ...rest };
}
