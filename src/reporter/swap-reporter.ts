import { describeError, isCodedError } from "../errors.ts";
import { isRolloutId } from "../grammar/rollout-id.ts";
import type { Logger } from "../log.ts";
import { isSlackApiError } from "../slack/slack-api-error.ts";
import type { ReportState } from "../store/report-state.ts";
import type { StoredSwapEvent } from "../swap/swap-events.ts";
import type { SwapRecord } from "../swap/swap-record.ts";
import { settleInFlight } from "./post-once.ts";
import { CardGone, ensureCard, refreshCard, withCard } from "./report-card.ts";
import type { ReportContext, ReporterDeps, ReportResult } from "./report-context.ts";
import { channelRetryMs, isBusy, slackRetryMs, spanToPost, waitsForChannel } from "./report-pace.ts";
import { showEvent, showFolded } from "./report-thread.ts";
import { RolloutReportRun } from "./rollout-reporter.ts";

export type { ReportResult };

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
  // a rollout (`ro-…`) has its card and thread too, told by its own run under the same care
  const run = isRolloutId(swapId)
    ? new RolloutReportRun(swapId, state, deps)
    : new ReportRun(swapId, state, deps);
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
    const ms = slackRetryMs(state.failures);
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

class ReportRun implements ReportContext {
  record!: SwapRecord;
  /** Names the swap, and its host once the record is read. */
  log: Logger;

  constructor(
    readonly swapId: string,
    readonly state: ReportState,
    readonly deps: ReporterDeps,
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
    await settleInFlight(this);
    // a new card (the first, or one after a deletion) starts its thread from the first event: read again
    if (await ensureCard(this)) return await this.once();
    // When other posts wait in the channel, an ended swap's card says how it ended before its thread
    // catches up: the channel takes about one post a second, and the card is an edit, which that does not
    // hold. In a quiet channel the thread goes first, so a card that reads as the end has the story under it.
    if (this.ended() && events.length > 0 && this.backlog() > 0) await this.editCard();
    for (let i = 0; i < events.length; ) {
      const event = events[i]!;
      if (waitsForChannel(event, record, this.backlog())) return await this.deferProgress();
      // In a busy channel a run posts once and gives its reporter back: each post waits its turn at the
      // channel, and a run that posted a whole thread so would hold its reporter for the whole queue while
      // a swap that has just ended waits for one to edit its card (docs/benchmarks.md, "concurrent").
      if (i > 0 && isBusy(this.backlog())) return { kind: "turn", ended: this.ended() };
      const count = this.foldCount(events.slice(i));
      if (count > 1) await withCard(this, () => showFolded(this, events.slice(i, i + count)));
      else await withCard(this, () => showEvent(this, event));
      i += count;
      this.state.cursor += count;
      this.state.posts = {};
      delete this.state.foldTo;
      await this.save();
    }
    // then the card: when it reads as the end, the thread already tells how it got there
    const later = await this.editCard();
    if (later !== undefined) return { kind: "later", ms: later.ms, why: "card" };
    if (this.ended()) await this.unreactLeftOver();
    if (this.ended() && this.state.cursor >= (await store.swaps.eventCount(id))) {
      await store.reports.caughtUp(id);
    }
    return { kind: "done" };
  }

  /** How many events from the cursor go into one post; a fold chosen now is saved with its post's in-flight note. */
  private foldCount(pending: readonly StoredSwapEvent[]): number {
    const span = spanToPost(pending, this.record, this.state.cursor, this.state.foldTo);
    this.state.foldTo = span.foldTo;
    return span.count;
  }

  /** The card edited when due (report-card.ts), a new one posted first when it was deleted; `ms` when the edit is due later. */
  private editCard(): Promise<{ ms: number } | undefined> {
    return withCard(this, () => refreshCard(this));
  }

  /** The card shows the progress meanwhile; the thread is looked at again once the queue is about drained. */
  private async deferProgress(): Promise<ReportResult> {
    const backlog = this.backlog();
    const cardDue = await this.editCard();
    const ms = channelRetryMs(backlog);
    this.log.debug({ backlog, ms }, "the channel is busy: progress waits, the card shows it");
    return { kind: "later", ms: Math.min(ms, cardDue?.ms ?? ms), why: "card" };
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

  /** The bot's posts queued in the swap's channel. */
  private backlog(): number {
    return this.deps.poster.postBacklog(this.record.channel);
  }

  async save(): Promise<void> {
    await this.deps.store.reports.set(this.swapId, this.state);
  }

  ended(): boolean {
    return this.record.outcome !== undefined;
  }
}
