import { UntilTimeout, until } from "../until.ts";
import type { EmulatorState } from "./emulator-state.ts";
import { renderAllConversations } from "./render-conversation.ts";
import type {
  ApiCall,
  EmulatorWarning,
  EphemeralMessage,
  ResponseUrlPost,
  SlackFile,
  SlackMessage,
  SocketConnection,
  SocketEnvelope,
  UserAction,
} from "./types.ts";

export interface WaitForOptions {
  timeoutMs?: number;
  intervalMs?: number;
  /** What is awaited, for the timeout error. */
  what?: string;
}

/**
 * What a test can look at: the channels, threads and ephemerals as people would see them, every Web API
 * call and response_url post, the warnings, user actions, files and Socket Mode traffic — and waitFor,
 * which polls until something shows up (and explains what it saw when it does not).
 */
export class Inspection {
  constructor(private readonly s: EmulatorState) {}

  /** Top-level messages of a channel (id or "#name"), in order; thread broadcasts included. */
  messages(channel: string): SlackMessage[] {
    const ch = this.s.workspace.resolveChannel(channel);
    return ch === undefined ? [] : this.s.workspace.topLevel(ch.id);
  }

  /** The replies in a thread, oldest first (the parent is `message(channel, threadTs)`). */
  thread(channel: string, threadTs: string): SlackMessage[] {
    const ch = this.s.workspace.resolveChannel(channel);
    return ch === undefined ? [] : this.s.workspace.replies(ch.id, threadTs);
  }

  message(channel: string, ts: string): SlackMessage | undefined {
    const ch = this.s.workspace.resolveChannel(channel);
    return ch === undefined ? undefined : this.s.workspace.findMessage(ch.id, ts);
  }

  /** The messages deleted in a channel, as they were before, in the order they were deleted. */
  deletedMessages(channel: string): SlackMessage[] {
    const ch = this.s.workspace.resolveChannel(channel);
    return ch === undefined ? [] : this.s.workspace.deleted.filter((m) => m.channel === ch.id);
  }

  /** Ephemeral messages in a channel, optionally only those shown to one user. */
  ephemerals(channel: string, userId?: string): EphemeralMessage[] {
    const ch = this.s.workspace.resolveChannel(channel);
    if (ch === undefined) return [];
    return this.s.workspace.ephemerals.filter(
      (e) => e.channel === ch.id && (userId === undefined || e.user === userId),
    );
  }

  /** Every Web API call, or those of one method, in order. */
  calls(method?: string): ApiCall[] {
    return method === undefined
      ? [...this.s.workspace.calls]
      : this.s.workspace.calls.filter((c) => c.method === method);
  }

  /** Every post to any response_url. */
  responses(): ResponseUrlPost[] {
    return [...this.s.responsePosts];
  }

  /** Things the emulator noticed that Slack tolerates (missing text fallback, bad thread_ts, …). */
  warnings(): EmulatorWarning[] {
    return [...this.s.workspace.warnings];
  }

  userActions(): UserAction[] {
    return [...this.s.workspace.userActions];
  }

  /** Files completed with files.completeUploadExternal or still pending, by id. */
  files(): SlackFile[] {
    return [...this.s.workspace.uploads.values()].map((u) => u.file);
  }

  /** How many calls were answered 429. */
  rateLimitedCount(): number {
    return this.s.rateLimited;
  }

  /** Every Socket Mode connection the bot opened, in order (open and closed). */
  socketConnections(): SocketConnection[] {
    return this.s.socketLink?.connections() ?? [];
  }

  /** Every envelope sent over Socket Mode, with its ack (`ackedAt`, `ackPayload`, `late`). */
  socketEnvelopes(): SocketEnvelope[] {
    return [...(this.s.socketLink?.envelopes ?? [])];
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

  /** Polls `predicate` until it returns a value; on timeout throws with `what` and a transcript. */
  async waitFor<T>(predicate: () => T | undefined | null | false, opts: WaitForOptions = {}): Promise<T> {
    const timeoutMs = opts.timeoutMs ?? 5000;
    const what = opts.what ?? "a condition";
    try {
      return await until(predicate, { what, timeoutMs, intervalMs: opts.intervalMs ?? 20 });
    } catch (error) {
      if (!(error instanceof UntilTimeout)) throw error;
    }
    const recent = this.s.workspace.calls
      .slice(-10)
      .map((c) => `  ${c.method} ${c.ok ? "ok" : `error=${c.error ?? c.status}`}`)
      .join("\n");
    throw new Error(
      `SlackEmulator.waitFor timed out after ${timeoutMs} ms waiting for ${what}\n` +
        `--- conversations ---\n${renderAllConversations({ workspace: this.s.workspace }) || "(no messages)"}\n` +
        `--- last API calls ---\n${recent || "  (none)"}`,
    );
  }
}
