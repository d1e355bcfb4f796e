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
  poster: Pick<SlackPoster, "post" | "update" | "react" | "unreact" | "upload" | "read">;
  /** At most one progress edit of a card per this many seconds (a stage change is shown at once). */
  cardUpdateSeconds: number;
  /** Who may approve, as mentions (approversMention), for the plan's first line. */
  approvers?: string;
  log: Logger;
  clock: Clock;
}

/** Done for now, or look again in `ms` (Slack refused: back off; or the card's next edit is due then). */
export type ReportResult = { kind: "done" } | { kind: "later"; ms: number; why: "slack" | "card" };

/** The metadata event type of every message the reporter posts (its payload names the swap and the post). */
export const REPORT_EVENT_TYPE = "modelswap_report";

/** Backoff after Slack refused: 1 s, doubling, at most half a minute; the swap never waits for it. */
const MAX_BACKOFF_MS = 30_000;

/**
 * Brings one swap's Slack up to date with its record and events: the card (posted once; edited as the
 * record changes, paced; posted again when someone deleted it), then every event not yet shown, in order,
 * into the card's thread. Only Slack's acceptance advances the reporter's cursor, so after an outage the
 * thread catches up in order and without duplicates. Reporting never decides anything about the swap: a
 * Slack failure is logged and retried later, and the swap goes on regardless.
 */
export async function reportSwap(swapId: string, deps: ReporterDeps): Promise<ReportResult> {
  const { store } = deps;
  const state = await store.reports.get(swapId);
  const run = new ReportRun(swapId, state, deps);
  try {
    const result = await run.go();
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
    for (const event of events) {
      await this.withCard(() => this.show(event));
      this.state.cursor += 1;
      this.state.posts = {};
      await this.save();
    }
    // then the card: when it reads as the end, the thread already tells how it got there
    const later = await this.withCard(() => this.refreshCard());
    if (later !== undefined) return later;
    if (this.record.outcome !== undefined && this.state.cursor >= (await store.swaps.eventCount(id))) {
      await store.reports.caughtUp(id);
    }
    return { kind: "done" };
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
      unreact: (ts, name) => poster.unreact(channel, ts, name, true),
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
        { threadTs, comment, urgent: this.ended() },
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
    await this.deps.poster.update(this.record.channel, this.state.cardTs!, card, { urgent: this.ended() });
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
