import { describeError } from "../errors.ts";
import { by } from "../grammar/person.ts";
import type { Logger } from "../log.ts";
import type { RolloutEvent, RolloutRecord } from "../rollout/rollout-record.ts";
import { context, message, section } from "../slack/blocks.ts";
import { isSlackApiError } from "../slack/slack-api-error.ts";
import type { ReportState } from "../store/report-state.ts";
import type { SwapRecord } from "../swap/swap-record.ts";
import { postOnce, settleInFlight } from "./post-once.ts";
import { editWhenDue, hash } from "./report-card.ts";
import type { ReporterDeps, ReportResult } from "./report-context.ts";
import { type Children, renderRolloutCard, renderRolloutPlan, rolloutEventLine } from "./rollout-messages.ts";

/** How long an ended rollout's card waits for its hosts' cards, to link their threads. */
const LINKS_WAIT_MS = 10 * 60_000;

/** How long a rollout's plan message is remembered for decisions: as long as an approval window can be. */
const PLAN_INDEX_MS = 7 * 86_400_000;

/**
 * One report run of a rollout: its card (posted once; edited as it or its hosts' swaps move, at the
 * card pace), then each event of its job not yet shown, in order, in the card's thread: the plan with its
 * buttons (indexed, so a ✅ or a click counts for that plan), the decision shown on it, the waves, the
 * halt. Posts go through the swap reporter's post-once, so a reporter that died never posts one twice;
 * the swap reporter's run (src/reporter/swap-reporter.ts) saves the state and retries a Slack refusal.
 */
export class RolloutReportRun {
  record!: RolloutRecord;
  log: Logger;

  constructor(
    readonly swapId: string,
    readonly state: ReportState,
    readonly deps: ReporterDeps,
  ) {
    this.log = deps.log.child({ rollout: swapId });
  }

  async go(): Promise<ReportResult> {
    const { store } = this.deps;
    const events = await store.rollouts.events(this.swapId, this.state.cursor);
    const record = await store.rollouts.get(this.swapId);
    if (record === undefined) {
      await store.reports.caughtUp(this.swapId);
      return { kind: "done" };
    }
    this.record = record;
    const children = await this.children();
    await settleInFlight(this);
    if (this.state.cardTs === undefined) {
      const number = this.state.cards + 1;
      const card = renderRolloutCard(record, children, this.state.links);
      this.state.cardTs = await postOnce(this, `card:${number}`, card, { urgent: true });
      this.state.cards = number;
      this.state.cardHash = hash(card);
      this.state.cardAt = this.deps.clock.now();
      this.state.cardStages = stagesOf(record);
      await this.save();
    }
    // an ended rollout's card says how it ended before its thread catches up: in a channel busy with its
    // hosts' threads (benchmark tables, charts, their outcomes) its last lines can wait a minute
    if (this.ended() && events.length > 0) await this.refreshCard(children);
    for (const event of events) {
      await this.show(event, children);
      this.state.cursor += 1;
      this.state.posts = {};
      await this.save();
    }
    await this.linkHosts();
    const later = await this.refreshCard(children);
    if (later !== undefined) return { kind: "later", ms: later, why: "card" };
    // an ended rollout's hosts may post their cards after it (theirs are never urgent): its card looks
    // again for their links a while, then lets them be (their swap ids are on it)
    const unlinked = record.hosts.some((h) => this.state.links[h.host] === undefined);
    const since = this.deps.clock.now() - Date.parse(record.finishedAt ?? "");
    if (this.ended() && unlinked && since < LINKS_WAIT_MS) return { kind: "later", ms: 5_000, why: "card" };
    // a running rollout's job saves at each look, which asks for this run again: its card follows its hosts
    if (this.ended() && this.state.cursor >= (await store.swaps.eventCount(this.swapId)))
      await store.reports.caughtUp(this.swapId);
    return { kind: "done" };
  }

  private async show(event: RolloutEvent, children: Children): Promise<void> {
    const { record, state } = this;
    const threadTs = state.cardTs!;
    const key = `${state.cards}:${state.cursor}`;
    if (event.type === "approval-requested") {
      const replaced = event.replaces === undefined ? undefined : state.plans[event.replaces.planHash];
      if (replaced !== undefined)
        await this.deps.poster.update(
          record.channel,
          replaced,
          renderRolloutPlan(record, children, { awaiting: false, replacedBy: true }),
          { tag: this.swapId },
        );
      const ts = await postOnce(
        this,
        `${key}:plan`,
        renderRolloutPlan(record, children, {
          awaiting: true,
          ...(this.deps.approvers === undefined ? {} : { approvers: this.deps.approvers }),
        }),
        { threadTs, urgent: true },
      );
      state.plans[event.planHash] = ts;
      await this.deps.store.approvals.indexPlanMessage(
        record.channel,
        ts,
        { swapId: record.id, planHash: event.planHash },
        PLAN_INDEX_MS,
      );
      return;
    }
    if (event.type === "approval-decided" || event.type === "approval-closed") {
      const ts = state.plans[event.planHash];
      const decided =
        event.type === "approval-decided"
          ? `${event.approved ? "✅ *Approved*" : "🚫 *Rejected*"}${by(event.by)}.`
          : event.why === "expired"
            ? "⌛ *Expired*: nobody decided in time."
            : "✋ *Cancelled*.";
      if (ts !== undefined)
        await this.deps.poster.update(
          record.channel,
          ts,
          renderRolloutPlan(record, children, { awaiting: false, decided }),
          { tag: this.swapId },
        );
    }
    const line = rolloutEventLine(event, record);
    if (line === undefined) return;
    try {
      // the rollout's few lines (about two a wave) go before its hosts' progress: it is what people follow
      await postOnce(this, `${key}:line`, message(line, [section(line)]), { threadTs, urgent: true });
    } catch (error) {
      if (!isSlackApiError(error) || !error.badRequest) throw error;
      const text = `⚠️ (a rollout message could not be shown: Slack said ${error.slackError})`;
      await postOnce(this, `${key}:refused`, message(text, [context(text)]), { threadTs });
    }
  }

  /**
   * Each host's thread, linked from the rollout's card once its swap's card is posted: its permalink is
   * asked of Slack once (chat.getPermalink) and kept. A host whose link Slack would not give is left
   * unlinked (its swap id is on the card) and asked again at the next look.
   */
  private async linkHosts(): Promise<void> {
    const { state, deps, record } = this;
    let added = false;
    for (const h of record.hosts) {
      if (state.links[h.host] !== undefined) continue;
      const cardTs = (await deps.store.reports.get(h.swapId)).cardTs;
      if (cardTs === undefined) continue;
      try {
        const url = await deps.poster.permalink(record.channel, cardTs);
        if (url !== "") {
          state.links[h.host] = url;
          added = true;
        }
      } catch (error) {
        this.log.warn({ host: h.host, err: describeError(error) }, "no permalink for a host's thread");
        break;
      }
    }
    if (added) await this.save();
  }

  /**
   * The card edited when what it shows changed, by the swap cards' pacing (report-pace's cardEdit): a new
   * step or wave, or the end, at once; other changes at most once per cardUpdateSeconds, and later while
   * Slack's queue of edits is long. `ms` when the edit is due later.
   */
  private async refreshCard(children: Children): Promise<number | undefined> {
    const { record } = this;
    const card = renderRolloutCard(record, children, this.state.links);
    const edit = await editWhenDue(this, card, stagesOf(record), this.ended());
    if (edit === undefined) return undefined;
    if (edit !== "edited") return edit.ms;
    await this.save();
    return undefined;
  }

  private async children(): Promise<Map<string, SwapRecord | undefined>> {
    const records = await Promise.all(
      this.record.hosts.map((h) => this.deps.store.swaps.get(h.swapId).catch(() => undefined)),
    );
    return new Map(this.record.hosts.map((h, i) => [h.swapId, records[i]]));
  }

  async save(): Promise<void> {
    await this.deps.store.reports.set(this.swapId, this.state);
  }

  ended(): boolean {
    return this.record.outcome !== undefined;
  }
}

/** Where the rollout is: a change here is shown on its card at once (as a swap's stage line is). */
function stagesOf(record: RolloutRecord): string {
  return `${record.step}:${record.wave}:${record.outcome ?? ""}`;
}
