import type { StoredSwapEvent } from "../swap/swap-events.ts";
import { STAGES, type SwapRecord } from "../swap/swap-record.ts";
import { isApprovalEvent } from "./post-plan.ts";
import { threadReply } from "./thread-messages.ts";

/**
 * When the reporter posts, folds, edits or waits: pure decisions on the record, the events and what
 * Slack's pacer has queued. The reporter (swap-reporter.ts) carries them out.
 */

/** Backoff after Slack refused: 1 s, doubling, at most half a minute; the swap never waits for it. */
export const MAX_BACKOFF_MS = 30_000;

/**
 * A channel takes about one post a second. With this many of the bot's posts already waiting there, a
 * running swap's progress is not added to the queue: its card (edited, not posted) shows where it is,
 * and the thread gets the progress later, folded into one message. Plans and everything an ended swap
 * has to say still go (first).
 */
export const DEFER_AT_BACKLOG = 5;
/** Progress messages folded into one post at most (each is a block or two; Slack allows 50). */
const MAX_FOLD = 12;

/** How long to wait before the next try after `failures` refusals in a row. */
export function slackRetryMs(failures: number): number {
  return Math.min(MAX_BACKOFF_MS, 1000 * 2 ** Math.min(failures - 1, 10));
}

/** The bot's posts queued in a channel (`backlog`) have reached DEFER_AT_BACKLOG. */
export function isBusy(backlog: number): boolean {
  return backlog >= DEFER_AT_BACKLOG;
}

/** A progress line (a thread reply that is not the outcome): several in a row may share one post. */
export function isProgressLine(event: StoredSwapEvent, record: SwapRecord): boolean {
  if (isApprovalEvent(event) || event.type === "benchmarked" || event.type === "finished") return false;
  const reply = threadReply(event, record);
  return reply !== undefined && reply.broadcast !== true;
}

/**
 * A running swap's next thread message waits while the channel's queue is long: posting it would only
 * hold the reporter (and its slot) at the pacer behind other swaps. Plans are never held (someone must
 * approve them), nor anything an ended swap has to say.
 */
export function waitsForChannel(event: StoredSwapEvent, record: SwapRecord, backlog: number): boolean {
  if (record.outcome !== undefined) return false;
  if (!isProgressLine(event, record) && event.type !== "benchmarked") return false;
  return isBusy(backlog);
}

/** When to look at a busy channel again: about when its queue has drained. */
export function channelRetryMs(backlog: number): number {
  return Math.min(MAX_BACKOFF_MS, Math.max(1000, backlog * 1000));
}

/**
 * How many events from the cursor go into one post: those a run already chose when it posted them
 * (`foldTo`, the last one's index), else the progress lines in a row that have piled up (at most MAX_FOLD).
 */
export function foldSpan(
  pending: readonly StoredSwapEvent[],
  record: SwapRecord,
  cursor: number,
  foldTo: number | undefined,
): number {
  if (foldTo !== undefined) return Math.min(pending.length, foldTo - cursor + 1);
  let count = 1;
  while (count < Math.min(pending.length, MAX_FOLD) && isProgressLine(pending[count]!, record)) count += 1;
  return count;
}

/**
 * How many events from the cursor the next post carries, and the span to note with its in-flight note
 * (`foldTo`, the last one's index). Every span is noted, a line posted alone included: a run that died
 * after posting a line alone left its post under the cursor's key, and the next run, finding more lines
 * piled up behind it, would fold them into a post that counts as made already, and lose them.
 */
export function spanToPost(
  pending: readonly StoredSwapEvent[],
  record: SwapRecord,
  cursor: number,
  foldTo: number | undefined,
): { count: number; foldTo: number } {
  const count = isProgressLine(pending[0]!, record) ? foldSpan(pending, record, cursor, foldTo) : 1;
  return { count, foldTo: foldTo ?? cursor + count - 1 };
}

/** What the card shows, and what it showed at its last edit. */
export interface CardView {
  hash: string;
  /** stageLine() of the record it shows. */
  stages: string;
}

export type CardEdit = { kind: "none" } | { kind: "edit" } | { kind: "later"; ms: number };

/**
 * Whether the card is edited now: not when nothing it shows changed; at once for a new stage or the end;
 * other changes at most once per `paceMs`. Slack takes about 50 edits a minute: with its queue of edits
 * long, a running swap's card waits for its next look instead of holding a reporter at the pacer (an
 * ended swap's edit goes ahead of the queue).
 */
export function cardEdit(
  now: CardView & { ended: boolean },
  last: Partial<CardView> & { at?: number },
  nowMs: number,
  paceMs: number,
  editBacklog: number,
): CardEdit {
  if (now.hash === last.hash) return { kind: "none" };
  const due = last.at === undefined || nowMs - last.at >= paceMs;
  if (now.stages === last.stages && !due && !now.ended)
    return { kind: "later", ms: last.at! + paceMs - nowMs };
  if (!now.ended && isBusy(editBacklog))
    return { kind: "later", ms: Math.min(MAX_BACKOFF_MS, Math.round(editBacklog * 1200)) };
  return { kind: "edit" };
}

/** Which stage is in which state: a change here is shown on the card at once. */
export function stageLine(record: SwapRecord): string {
  return `${STAGES.map((s) => record.stages[s].state[0]).join("")}${record.outcome ?? ""}`;
}
