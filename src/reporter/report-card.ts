import { createHash } from "node:crypto";
import type { SlackMessage } from "../slack/blocks.ts";
import { isSlackApiError, type SlackApiError } from "../slack/slack-api-error.ts";
import { urgentFor } from "../swap/urgency.ts";
import { postOnce } from "./post-once.ts";
import type { ReportContext } from "./report-context.ts";
import { cardEdit, stageLine } from "./report-pace.ts";
import { renderSwapCard } from "./swap-card.ts";

/** The swap's card: posted once, edited as the record changes (paced), posted again when it was deleted. */

/** The card exists: posted now (true) when it never was or was deleted, with the story to tell again. */
export async function ensureCard(ctx: ReportContext): Promise<boolean> {
  const { state } = ctx;
  if (state.cardTs !== undefined) return false;
  const card = renderSwapCard(ctx.record);
  const number = state.cards + 1;
  // the requester's first sight of the swap: it does not wait behind other swaps' progress
  const ts = await postOnce(ctx, `card:${number}`, card, { urgent: urgentFor(ctx.record, true) });
  state.cardTs = ts;
  state.cards = number;
  delete state.posts[`card:${number}`];
  state.cardHash = hash(card);
  state.cardAt = ctx.deps.clock.now();
  state.cardStages = stageLine(ctx.record);
  if (number > 1) {
    // a new card and thread: the whole story goes into it again, in order (the old thread went with its card)
    state.cursor = 0;
    state.posts = {};
    state.plans = {};
  }
  await ctx.save();
  return number > 1;
}

/** Edits the card when what it shows changed (report-pace's cardEdit); `ms` when the edit is due later. */
export async function refreshCard(ctx: ReportContext): Promise<{ ms: number } | undefined> {
  const { record } = ctx;
  const edit = await editWhenDue(
    ctx,
    renderSwapCard(record),
    stageLine(record),
    urgentFor(record, ctx.ended()),
  );
  return edit === "edited" ? undefined : edit;
}

/**
 * A card (a swap's or a rollout's) edited by the cards' one pacing (report-pace's cardEdit): a new stage
 * or the end at once, other changes at most once per cardUpdateSeconds and later while Slack's queue of
 * edits is long. What it showed is kept in the report state (the caller saves it); `ms` when the edit is
 * due later, undefined when nothing changed.
 */
export async function editWhenDue(
  ctx: Pick<ReportContext, "state" | "deps" | "swapId" | "ended"> & { record: { channel: string } },
  card: SlackMessage,
  stages: string,
  urgent: boolean,
): Promise<{ ms: number } | "edited" | undefined> {
  const { state, deps } = ctx;
  const view = { hash: hash(card), stages, ended: ctx.ended() };
  const now = deps.clock.now();
  const edit = cardEdit(
    view,
    { hash: state.cardHash, stages: state.cardStages, at: state.cardAt },
    now,
    deps.cardUpdateSeconds * 1000,
    deps.poster.updateBacklog(),
  );
  if (edit.kind === "none") return undefined;
  if (edit.kind === "later") return { ms: edit.ms };
  await deps.poster.update(ctx.record.channel, state.cardTs!, card, { urgent, tag: ctx.swapId });
  state.cardHash = view.hash;
  state.cardAt = now;
  state.cardStages = view.stages;
  return "edited";
}

/**
 * Runs a Slack call that needs the card; when Slack says the card is gone (deleted), the card is
 * forgotten and CardGone thrown: the run starts over, posts a new card and tells every event again there.
 */
export async function withCard<T>(ctx: ReportContext, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (!isSlackApiError(error) || !error.messageGone) throw error;
    ctx.log.warn(
      { card: ctx.state.cardTs, method: error.method },
      "the swap's card is gone from Slack (deleted?): posting a new one",
    );
    delete ctx.state.cardTs;
    await ctx.save();
    throw new CardGone(error);
  }
}

/** The card turned out to be gone: the run starts over with a new one. */
export class CardGone extends Error {
  constructor(override readonly cause: SlackApiError) {
    super("the swap's card is gone");
  }
}

/** What a card shows, as a hash: an edit goes out only when it changed (a rollout's card too). */
export function hash(msg: SlackMessage): string {
  return createHash("sha1").update(JSON.stringify(msg)).digest("hex");
}
