import { describe, expect, it } from "vitest";
import {
  cardEdit,
  channelRetryMs,
  DEFER_AT_BACKLOG,
  foldSpan,
  isProgressLine,
  MAX_BACKOFF_MS,
  slackRetryMs,
  spanToPost,
  stageLine,
  waitsForChannel,
} from "../../src/reporter/report-pace.ts";
import type { StoredSwapEvent } from "../../src/swap/swap-events.ts";
import { aRecord } from "../support/records.ts";

/**
 * The reporter's pacing and folding, as pure decisions: what a channel sees when Slack's pace makes the
 * bot's posts queue (test/reporter/busy-channel.test.ts shows the same against the Slack emulator).
 */
const at = "2026-12-06T12:00:00.000Z";
const running = aRecord({ step: "health" });
const ended = aRecord({ step: "done", outcome: "succeeded", finishedAt: at });
const progress = (n: number): StoredSwapEvent[] =>
  Array.from(
    { length: n },
    (_, i) => ({ type: "downloaded", files: i + 1, bytes: 1_000_000, at }) as StoredSwapEvent,
  );
const finished = { type: "finished", outcome: "succeeded", at } as StoredSwapEvent;
const planned: StoredSwapEvent = { type: "approval-requested", planHash: "h", expiresAt: at, at };
describe("a running swap's progress in a busy channel", () => {
  it("waits while the bot's queued posts reach DEFER_AT_BACKLOG, and goes when fewer wait", () => {
    expect(waitsForChannel(progress(1)[0]!, running, DEFER_AT_BACKLOG)).toBe(true);
    expect(waitsForChannel(progress(1)[0]!, running, DEFER_AT_BACKLOG - 1)).toBe(false);
  });

  it("never holds a plan (someone must approve it) nor anything a swap that ended has to say", () => {
    expect(waitsForChannel(planned, running, 100)).toBe(false);
    expect(waitsForChannel(progress(1)[0]!, ended, 100)).toBe(false);
    expect(waitsForChannel(finished, ended, 100)).toBe(false);
  });

  it("is looked at again about when the queue has drained: a second a post, 1 s to 30 s", () => {
    expect(channelRetryMs(0)).toBe(1000);
    expect(channelRetryMs(7)).toBe(7000);
    expect(channelRetryMs(500)).toBe(MAX_BACKOFF_MS);
  });
});

describe("folding progress lines into one post", () => {
  it("takes the progress lines in a row, at most 12, and stops at the outcome", () => {
    expect(foldSpan(progress(3), running, 0, undefined)).toBe(3);
    expect(foldSpan(progress(20), running, 0, undefined)).toBe(12);
    expect(foldSpan([...progress(2), finished, ...progress(2)], running, 0, undefined)).toBe(2);
    expect(isProgressLine(finished, ended)).toBe(false);
    expect(isProgressLine(planned, running)).toBe(false);
  });

  it("notes a line posted alone as a span of one, so the run after a crash never folds later lines into it", () => {
    // a run posts event 4 alone (nothing else had piled up), notes its span, and dies before its cursor moves
    const first = spanToPost(progress(1), running, 4, undefined);
    expect(first).toEqual({ count: 1, foldTo: 4 });
    // the next run finds its post under the cursor's key, and two more lines behind it: they are posts of
    // their own, not a fold that would count as posted already (crash-park lost a line so, 2026-12-07)
    expect(spanToPost(progress(3), running, 4, first.foldTo)).toEqual({ count: 1, foldTo: 4 });
    // without a note, the same events fold: the span the note must pin
    expect(spanToPost(progress(3), running, 4, undefined)).toEqual({ count: 3, foldTo: 6 });
  });

  it("keeps the span a run already posted (foldTo), so a reporter that died moves past the same events", () => {
    // events 4..6 were folded by a run that died after posting; 10 more have piled up since
    expect(foldSpan(progress(13), running, 4, 6)).toBe(3);
  });
});

describe("editing the card", () => {
  const last = { hash: "a", stages: "dd-", at: 10_000 };
  it("is not edited when nothing it shows changed", () => {
    expect(cardEdit({ hash: "a", stages: "dd-", ended: false }, last, 10_500, 5000, 0)).toEqual({
      kind: "none",
    });
  });

  it("shows a new stage at once, and other changes at most once per pace", () => {
    expect(cardEdit({ hash: "b", stages: "ddd", ended: false }, last, 10_500, 5000, 0)).toEqual({
      kind: "edit",
    });
    expect(cardEdit({ hash: "b", stages: "dd-", ended: false }, last, 11_000, 5000, 0)).toEqual({
      kind: "later",
      ms: 4000,
    });
    expect(cardEdit({ hash: "b", stages: "dd-", ended: false }, last, 15_000, 5000, 0)).toEqual({
      kind: "edit",
    });
  });

  it("waits while Slack's edits queue for a running swap, but an ended swap's card goes at once", () => {
    expect(
      cardEdit({ hash: "b", stages: "ddd", ended: false }, last, 20_000, 5000, DEFER_AT_BACKLOG),
    ).toEqual({
      kind: "later",
      ms: DEFER_AT_BACKLOG * 1200,
    });
    expect(cardEdit({ hash: "b", stages: "ddds", ended: true }, last, 10_001, 5000, 50)).toEqual({
      kind: "edit",
    });
  });

  it("reads a stage change and the outcome in the stage line", () => {
    expect(stageLine(ended)).not.toBe(stageLine(running));
    expect(stageLine(ended).endsWith("succeeded")).toBe(true);
  });
});

describe("after Slack refused", () => {
  it("backs off 1 s, doubling, at most 30 s", () => {
    expect([1, 2, 3, 5, 6, 40].map(slackRetryMs)).toEqual([1000, 2000, 4000, 16_000, 30_000, 30_000]);
  });
});
