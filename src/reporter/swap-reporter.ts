import { createHash } from "node:crypto";
import { isApprovalEvent, type PlanOutlet, postPlanEvent } from "../approval/post-plan.ts";
import type { Clock } from "../clock.ts";
import { describeError, isCodedError } from "../errors.ts";
import type { Logger } from "../log.ts";
import {
  isSlackApiError,
  type PostMetadata,
  type SlackApiError,
  type SlackPoster,
} from "../slack/slack-poster.ts";
import type { ReportState } from "../store/report-state.ts";
import type { Store } from "../store/store.ts";
import type { StoredSwapEvent } from "../swap/swap-events.ts";
import { STAGES, type SwapRecord } from "../swap/swap-record.ts";
import { renderBenchmarkComparison } from "./benchmark-table.ts";
import { renderBenchmarkChart } from "./chart/benchmark-chart.ts";
import { context, message, type SlackMessage } from "./message.ts";
import { renderSwapCard } from "./swap-card.ts";
import { threadReply } from "./thread-messages.ts";

export interface ReporterDeps {
  store: Pick<Store, "swaps" | "reports" | "approvals">;
  poster: Pick<
    SlackPoster,
    | "post"
    | "update"
    | "react"
    | "unreact"
    | "upload"
    | "read"
    | "postBacklog"
    | "updateBacklog"
    | "unreactBacklog"
    | "hurry"
  >;
  /** At most one progress edit of a card per this many seconds (a stage change is shown at once). */
  cardUpdateSeconds: number;
  /** Who may approve, as mentions (approversMention), for the plan's first line. */
  approvers?: string;
  log: Logger;
  clock: Clock;
}

/**
 * Done for now, or look again: in `ms` (Slack refused: back off; or the card's next edit is due then), or
 * at once but after the looks someone waits for (`turn`: the run posted once in a busy channel and gave
 * its reporter back; `ended` says whether it was an ended swap's, whose turns go before running swaps').
 */
export type ReportResult =
  | { kind: "done" }
  | { kind: "later"; ms: number; why: "slack" | "card" }
  | { kind: "turn"; ended: boolean };

/** The metadata event type of every message the reporter posts (its payload names the swap and the post). */
export const REPORT_EVENT_TYPE = "modelswap_report";

/** Backoff after Slack refused: 1 s, doubling, at most half a minute; the swap never waits for it. */
const MAX_BACKOFF_MS = 30_000;

/**
 * A channel takes about one post a second. With this many of the bot's posts already waiting there, a
 * running swap's progress is not added to the queue: its card (edited, not posted) shows where it is,
 * and the thread gets the progress later, folded into one message. Plans and everything an ended swap
 * has to say still go (first).
 */
export const DEFER_AT_BACKLOG = 5;
/** Progress messages folded into one post at most (each is a block or two; Slack allows 50). */
const MAX_FOLD = 12;

/**
 * Brings one swap's Slack up to date with its record and events: the card (posted once; edited as the
 * record changes, paced; posted again when someone deleted it), then every event not yet shown, in order,
 * into the card's thread. Only Slack's acceptance advances the reporter's cursor, so after an outage the
 * thread catches up in order and without duplicates. Reporting never decides anything about the swap: a
 * Slack failure is logged and retried later, and the swap goes on regardless.
 */
export async function reportSwap(
  swapId: string,
  deps: ReporterDeps,
  /** Which job asked, and how long it waited for a reporter: said in the debug line of the run. */
  asked?: { job: string; queuedMs?: number },
): Promise<ReportResult> {
  const { store } = deps;
  const state = await store.reports.get(swapId);
  const run = new ReportRun(swapId, state, deps);
  const startedAt = Date.now();
  try {
    const result = await run.go();
    // where an ended swap's outcome waits before its card says it (docs/benchmarks.md, "concurrent"): for
    // a free reporter (queuedMs), then in this run, at Slack's pace (ms)
    run.log.debug(
      {
        ...asked,
        ms: Date.now() - startedAt,
        result: result.kind === "later" ? `later ${result.why} ${result.ms} ms` : result.kind,
      },
      "report run",
    );
    if (state.failures > 0) {
      run.log.info({ failures: state.failures }, "Slack answers again: the swap's thread caught up");
    }
    state.failures = 0;
    delete state.failingSince;
    delete state.retryAt;
    delete state.lastError;
    await store.reports.set(swapId, state);
    return result;
  } catch (error) {
    if (!isSlackApiError(error)) throw error;
    const now = deps.clock.now();
    state.failures += 1;
    state.failingSince ??= now;
    state.lastError = error.slackError;
    const ms = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** Math.min(state.failures - 1, 10));
    state.retryAt = now + ms;
    await store.reports.set(swapId, state);
    // once at the start of an outage, then every tenth try: the log says what to fix, not every second
    if (state.failures === 1 || state.failures % 10 === 0) {
      run.log.warn(
        {
          method: error.method,
          slackError: error.slackError,
          failures: state.failures,
          retryInMs: ms,
          fix: error.fix,
        },
        "Slack refused the swap's report; it is tried again later (the swap goes on)",
      );
    }
    return { kind: "later", ms, why: "slack" };
  }
}

/** The record, or undefined when there is none or it does not parse (reported: never rendered). */
async function readRecord(swapId: string, deps: ReporterDeps): Promise<SwapRecord | undefined> {
  try {
    return await deps.store.swaps.get(swapId);
  } catch (error) {
    if (!isCodedError(error) || error.code !== "STORE_RECORD_INVALID") throw error;
    deps.log.error(
      { swap: swapId, err: describeError(error) },
      "cannot report a swap whose record does not parse",
    );
    return undefined;
  }
}

class ReportRun {
  private record!: SwapRecord;
  /** Names the swap, and its host once the record is read. */
  log: Logger;

  constructor(
    private readonly swapId: string,
    private readonly state: ReportState,
    private readonly deps: ReporterDeps,
  ) {
    this.log = deps.log.child({ swap: swapId });
  }

  async go(): Promise<ReportResult> {
    // a card found gone is posted again and the story told again in its thread; more than a few times
    // in one run means something else is wrong: left to the next run
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.once();
      } catch (error) {
        if (!(error instanceof CardGone) || attempt >= 3)
          throw error instanceof CardGone ? error.cause : error;
      }
    }
  }

  private async once(): Promise<ReportResult> {
    const { store } = this.deps;
    const id = this.swapId;
    // Events first, then the record: a record saved with (or after) these events is at least as new as
    // they are, so an event never meets an older record (a plan posted before the record had its plan).
    const events = await store.swaps.events(id, this.state.cursor);
    const record = await readRecord(id, this.deps);
    if (record === undefined) {
      await store.reports.caughtUp(id);
      return { kind: "done" };
    }
    this.record = record;
    this.log = this.deps.log.child({ swap: id, host: record.host });
    await this.settleInFlight();
    // a new card (the first, or one after a deletion) starts its thread from the first event: read again
    if (await this.ensureCard()) return await this.once();
    // When other posts wait in the channel, an ended swap's card says how it ended before its thread
    // catches up: the channel takes about one post a second, and the card is an edit, which that does not
    // hold. In a quiet channel the thread goes first, so a card that reads as the end has the story under it.
    if (this.ended() && events.length > 0 && this.deps.poster.postBacklog(this.record.channel) > 0)
      await this.withCard(() => this.refreshCard());
    for (let i = 0; i < events.length; ) {
      const event = events[i]!;
      if (this.deferred(event)) return await this.deferProgress();
      // In a busy channel a run posts once and gives its reporter back: each post waits its turn at the
      // channel, and a run that posted a whole thread so would hold its reporter for the whole queue while
      // a swap that has just ended waits for one to edit its card (docs/benchmarks.md, "concurrent").
      if (i > 0 && this.channelBusy()) return { kind: "turn", ended: this.ended() };
      const count = this.foldable(event) ? this.foldCount(events.slice(i)) : 1;
      if (count > 1) await this.withCard(() => this.showFolded(events.slice(i, i + count)));
      else await this.withCard(() => this.show(event));
      i += count;
      this.state.cursor += count;
      this.state.posts = {};
      delete this.state.foldTo;
      await this.save();
    }
    // then the card: when it reads as the end, the thread already tells how it got there
    const later = await this.withCard(() => this.refreshCard());
    if (later !== undefined) return later;
    if (this.ended()) await this.unreactLeftOver();
    if (this.record.outcome !== undefined && this.state.cursor >= (await store.swaps.eventCount(id))) {
      await store.reports.caughtUp(id);
    }
    return { kind: "done" };
  }

  /** The bot's ✅/❌ left on decided plans while reactions.remove had a queue (ReportState.unreacts). */
  private async unreactLeftOver(): Promise<void> {
    const { channel } = this.record;
    while (this.state.unreacts.length > 0) {
      const { ts, name } = this.state.unreacts[0]!;
      await this.deps.poster.unreact(channel, ts, name);
      this.state.unreacts.shift();
      await this.save();
    }
  }

  private async save(): Promise<void> {
    await this.deps.store.reports.set(this.swapId, this.state);
  }

  /**
   * Posts one message once. Its key names it (card number, event, part); Slack's copy carries the key in
   * its metadata. Before the post the key is noted as in flight, after it the ts is kept: a reporter that
   * dies in between leaves the note, and the next one asks Slack instead of posting a second copy.
   */
  private async postOnce(
    key: string,
    msg: SlackMessage,
    options: { threadTs?: string; broadcast?: boolean; urgent?: boolean } = {},
  ): Promise<string> {
    const done = this.state.posts[key];
    if (done !== undefined) return done;
    this.state.inFlight = { key, ...(options.threadTs === undefined ? {} : { threadTs: options.threadTs }) };
    await this.save();
    let ts: string;
    try {
      ts = await this.deps.poster.post(this.record.channel, msg, {
        ...options,
        urgent: options.urgent ?? this.ended(),
        metadata: this.metadata(key),
        tag: this.swapId,
      });
    } catch (error) {
      // Slack said no: nothing was posted (a timeout or a 5xx may have posted it: that one is looked for)
      if (isSlackApiError(error) && error.refused) {
        delete this.state.inFlight;
        await this.save();
      }
      throw error;
    }
    this.state.posts[key] = ts;
    delete this.state.inFlight;
    await this.save();
    return ts;
  }

  private metadata(key: string): PostMetadata {
    return { event_type: REPORT_EVENT_TYPE, event_payload: { swap: this.swapId, post: key } };
  }

  /** A post left in flight by a reporter that died: is it in Slack? Then it counts as posted. */
  private async settleInFlight(): Promise<void> {
    const flying = this.state.inFlight;
    if (flying === undefined) return;
    let found: string | undefined;
    try {
      const messages = await this.deps.poster.read(
        this.record.channel,
        flying.threadTs === undefined
          ? { oldest: String(Date.parse(this.record.createdAt) / 1000 - 60) }
          : { threadTs: flying.threadTs },
      );
      found = messages.find(
        (m) =>
          m.metadata?.event_type === REPORT_EVENT_TYPE &&
          m.metadata.event_payload?.swap === this.swapId &&
          m.metadata.event_payload?.post === flying.key,
      )?.ts;
    } catch (error) {
      if (!isSlackApiError(error)) throw error;
      if (error.messageGone) found = undefined;
      else {
        // without the history scope Slack cannot be asked: the post is sent again (a duplicate at worst)
        this.log.warn(
          {
            post: flying.key,
            slackError: error.slackError,
            fix: "add channels:history (and groups:history) to the Slack app's scopes and reinstall it (manifest.yml)",
          },
          "cannot tell whether a post whose reporter died reached Slack; sending it again",
        );
      }
    }
    if (found !== undefined) {
      this.log.info(
        { post: flying.key, ts: found },
        "a post whose reporter died did reach Slack: kept, not sent again",
      );
      if (flying.key.startsWith("card:")) {
        this.state.cardTs = found;
        this.state.cards = Number(flying.key.slice("card:".length));
      } else this.state.posts[flying.key] = found;
    }
    delete this.state.inFlight;
    await this.save();
  }

  /** The card exists: posted now (true) when it never was or was deleted, with the story to tell again. */
  private async ensureCard(): Promise<boolean> {
    if (this.state.cardTs !== undefined) return false;
    const card = this.renderCard();
    const number = this.state.cards + 1;
    // the requester's first sight of the swap: it does not wait behind other swaps' progress
    const ts = await this.postOnce(`card:${number}`, card, { urgent: true });
    this.state.cardTs = ts;
    this.state.cards = number;
    delete this.state.posts[`card:${number}`];
    this.state.cardHash = hash(card);
    this.state.cardAt = this.deps.clock.now();
    this.state.cardStages = stageLine(this.record);
    if (number > 1) {
      // a new card and thread: the whole story goes into it again, in order (the old thread went with its card)
      this.state.cursor = 0;
      this.state.posts = {};
      this.state.plans = {};
    }
    await this.save();
    return number > 1;
  }

  /**
   * Runs a Slack call that needs the card; when Slack says the card is gone (deleted), a new card is
   * posted, and the call is made again there.
   */
  private async withCard<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (!isSlackApiError(error) || !error.messageGone) throw error;
      await this.cardGone(error);
      throw new CardGone(error); // the new card's thread gets every event again, from the first
    }
  }

  private async cardGone(error: SlackApiError): Promise<void> {
    this.log.warn(
      { card: this.state.cardTs, method: error.method },
      "the swap's card is gone from Slack (deleted?): posting a new one",
    );
    delete this.state.cardTs;
    await this.save();
  }

  /**
   * A reply in the card's thread, once; `part` tells apart the messages of one event. A plan (someone must
   * approve it before the swap can go on) and whatever an ended swap still has to say go ahead of other
   * swaps' progress messages when Slack's pace makes them queue.
   */
  private reply(part: string, msg: SlackMessage, broadcast = false): Promise<string> {
    const threadTs = this.state.cardTs!;
    return this.postOnce(`${this.state.cards}:${this.state.cursor}:${part}`, msg, {
      threadTs,
      broadcast,
      urgent: part === "plan" || this.ended(),
    });
  }

  /**
   * A running swap's next thread message waits while the channel's queue is long (DEFER_AT_BACKLOG):
   * posting it would only hold this reporter (and its slot) at the pacer behind other swaps. Plans are
   * never held: someone must approve them.
   */
  private deferred(event: StoredSwapEvent): boolean {
    if (this.ended() || (!this.foldable(event) && event.type !== "benchmarked")) return false;
    return this.channelBusy();
  }

  /** The bot's posts queued in the swap's channel have reached DEFER_AT_BACKLOG. */
  private channelBusy(): boolean {
    return this.deps.poster.postBacklog(this.record.channel) >= DEFER_AT_BACKLOG;
  }

  /** The card shows the progress meanwhile; the thread is looked at again once the queue is about drained. */
  private async deferProgress(): Promise<ReportResult> {
    const backlog = this.deps.poster.postBacklog(this.record.channel);
    const cardDue = await this.withCard(() => this.refreshCard());
    const ms = Math.min(MAX_BACKOFF_MS, Math.max(1000, backlog * 1000));
    this.log.debug({ backlog, ms }, "the channel is busy: progress waits, the card shows it");
    const cardMs = cardDue?.kind === "later" ? cardDue.ms : ms;
    return { kind: "later", ms: Math.min(ms, cardMs), why: "card" };
  }

  /** A progress line (a thread reply that is not the outcome): several in a row may share one post. */
  private foldable(event: StoredSwapEvent): boolean {
    if (isApprovalEvent(event) || event.type === "benchmarked" || event.type === "finished") return false;
    const reply = threadReply(event, this.record);
    return reply !== undefined && reply.broadcast !== true;
  }

  /**
   * How many events from the cursor go into one post: those already chosen by a run that posted them
   * (state.foldTo), else the progress lines in a row that have piled up (at most MAX_FOLD).
   */
  private foldCount(pending: readonly StoredSwapEvent[]): number {
    if (this.state.foldTo !== undefined)
      return Math.min(pending.length, this.state.foldTo - this.state.cursor + 1);
    let count = 1;
    while (count < Math.min(pending.length, MAX_FOLD) && this.foldable(pending[count]!)) count += 1;
    if (count > 1) this.state.foldTo = this.state.cursor + count - 1; // saved with the post's in-flight note
    return count;
  }

  /** Progress lines that piled up while the channel was busy, in order, as one thread message. */
  private async showFolded(events: readonly StoredSwapEvent[]): Promise<void> {
    const replies = events.flatMap((event) => threadReply(event, this.record) ?? []);
    const folded = message(
      replies.map((r) => r.message.text).join("\n"),
      replies.flatMap((r) => r.message.blocks ?? []),
    );
    try {
      await this.reply("message", folded);
    } catch (error) {
      if (!isSlackApiError(error) || !error.badRequest) throw error;
      this.log.error(
        { events: events.map((e) => e.type), err: error.slackError },
        "Slack refused a thread message",
      );
      const text = `⚠️ (${events.length} progress messages could not be shown: Slack said ${error.slackError})`;
      await this.reply("refused", message(text, [context(text)]));
    }
  }

  /** The swap has its outcome: what is left to say is how it ended, and nobody should wait for it. */
  private ended(): boolean {
    return this.record.outcome !== undefined;
  }

  private async show(event: StoredSwapEvent): Promise<void> {
    if (isApprovalEvent(event)) {
      await postPlanEvent(event, this.record, this.state.plans, this.planOutlet(), this.deps.approvers);
      return;
    }
    if (event.type === "benchmarked") {
      await this.reply("table", renderBenchmarkComparison(event.current, event.previous, event.engine));
      if (this.state.posts[`${this.state.cards}:${this.state.cursor}:chart`] === undefined) {
        await this.shareChart(event, this.state.cardTs!);
        this.state.posts[`${this.state.cards}:${this.state.cursor}:chart`] = "uploaded";
      }
      return;
    }
    const reply = threadReply(event, this.record);
    if (reply === undefined) return;
    try {
      await this.reply("message", reply.message, reply.broadcast === true);
    } catch (error) {
      if (!isSlackApiError(error) || !error.badRequest) throw error;
      // a message Slack refuses as such would be refused forever: say so in its place and go on
      this.log.error({ event: event.type, err: error.slackError }, "Slack refused a thread message");
      const text = `⚠️ (a ${event.type} message could not be shown: Slack said ${error.slackError})`;
      await this.reply("refused", message(text, [context(text)]));
    }
  }

  private planOutlet(): PlanOutlet {
    const { poster, store } = this.deps;
    const { channel, id } = this.record;
    let said = 0;
    return {
      post: (msg) => this.reply("plan", msg),
      update: async (ts, msg) => {
        try {
          await poster.update(channel, ts, msg, { urgent: true });
        } catch (error) {
          // a plan message someone deleted: its state is shown by the card and the thread; nothing to fix
          if (!isSlackApiError(error) || !error.messageGone) throw error;
        }
      },
      react: (ts, name) => poster.react(channel, ts, name, true),
      unreact: async (ts, name) => {
        // cosmetic (the plan's text says it was decided): not worth holding a running swap's reporter
        if (!this.ended() && poster.unreactBacklog() > 0) {
          this.state.unreacts.push({ ts, name });
          await this.save();
          return;
        }
        await poster.unreact(channel, ts, name, true);
      },
      index: async (ts, planHash) => {
        const ttl = store.swaps.ttlMs({ outcome: "succeeded" }) ?? 86_400_000;
        await store.approvals.indexPlanMessage(channel, ts, { swapId: id, planHash }, ttl);
      },
      say: async (text) => {
        said += 1;
        await this.reply(`say-${said}`, message(text, [context(text)]));
      },
      remember: () => this.save(),
    };
  }

  /** The chart under the table; best effort (no files:write scope, an upload refused): the table has the numbers. */
  private async shareChart(
    event: Extract<StoredSwapEvent, { type: "benchmarked" }>,
    threadTs: string,
  ): Promise<void> {
    const { record } = this;
    const sha = record.plan?.model.sha.slice(0, 7);
    const model = `${record.plan?.model.repo ?? record.request.model.repo}${sha ? `@${sha}` : ""}`;
    try {
      const chart = await renderBenchmarkChart(event.current, event.previous, {
        model,
        host: record.host,
        swapId: record.id,
      });
      const comment =
        event.previous === undefined
          ? `📊 Benchmark of \`${model}\` on ${record.host} (no earlier numbers to compare with)`
          : `📊 Benchmark of \`${model}\` vs \`${event.previous.model}\` on ${record.host}`;
      const file = await this.deps.poster.upload(
        record.channel,
        { bytes: chart.png, filename: chart.filename, title: chart.title, altText: chart.altText },
        { threadTs, comment, urgent: this.ended(), tag: this.swapId },
      );
      this.log.info({ file, bytes: chart.png.length }, "benchmark chart uploaded");
    } catch (error) {
      this.log.warn(
        { err: describeError(error) },
        "could not upload the benchmark chart; the table in the thread has the numbers",
      );
    }
  }

  /** Edits the card when what it shows changed: at once for a new stage or the end, else paced. */
  private async refreshCard(): Promise<ReportResult | undefined> {
    const card = this.renderCard();
    const cardHash = hash(card);
    if (cardHash === this.state.cardHash) return undefined;
    const now = this.deps.clock.now();
    const stages = stageLine(this.record);
    const paceMs = this.deps.cardUpdateSeconds * 1000;
    const due = this.state.cardAt === undefined || now - this.state.cardAt >= paceMs;
    if (stages === this.state.cardStages && !due && this.record.outcome === undefined) {
      return { kind: "later", ms: this.state.cardAt! + paceMs - now, why: "card" };
    }
    // Slack takes about 50 edits a minute: with the queue long, a running swap's card waits its next look
    // instead of holding a reporter at the pacer (an ended swap's edit goes ahead of the queue)
    const queued = this.deps.poster.updateBacklog();
    if (this.record.outcome === undefined && queued >= DEFER_AT_BACKLOG) {
      return { kind: "later", ms: Math.min(MAX_BACKOFF_MS, Math.round(queued * 1200)), why: "card" };
    }
    await this.deps.poster.update(this.record.channel, this.state.cardTs!, card, {
      urgent: this.ended(),
      tag: this.swapId,
    });
    this.state.cardHash = cardHash;
    this.state.cardAt = now;
    this.state.cardStages = stages;
    return undefined;
  }

  private renderCard(): SlackMessage {
    return renderSwapCard(this.record);
  }
}

/** The card turned out to be gone: the run starts over with a new one. */
class CardGone extends Error {
  constructor(override readonly cause: SlackApiError) {
    super("the swap's card is gone");
  }
}

function hash(msg: SlackMessage): string {
  return createHash("sha1").update(JSON.stringify(msg)).digest("hex");
}

/** Which stage is in which state: a change here is shown on the card at once. */
function stageLine(record: SwapRecord): string {
  return `${STAGES.map((s) => record.stages[s].state[0]).join("")}${record.outcome ?? ""}`;
}
