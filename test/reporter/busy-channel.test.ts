import { WebClient } from "@slack/web-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../src/clock.ts";
import { createLogger } from "../../src/log.ts";
import { DEFER_AT_BACKLOG, reportSwap } from "../../src/reporter/swap-reporter.ts";
import { SlackPoster } from "../../src/slack/slack-poster.ts";
import { Store } from "../../src/store/store.ts";
import type { SwapEvent } from "../../src/swap/swap-events.ts";
import { type SlackEmulator, startSlackEmulator } from "../../testbench/slack/slack-emulator.ts";
import { aRecord } from "../support/records.ts";
import { useRedisServer } from "../support/redis-server.ts";
import { qwenPlan } from "../unit/stages/late-stage-fixtures.ts";

/**
 * The reporter in a busy channel (Slack takes about one post a second per channel): with the bot's
 * own posts queued there, a running swap's progress is not added to the queue — the card (an edit, not a
 * post) shows it — and once the queue has drained, the progress that piled up goes into the thread as
 * one message, in order, nothing left out. An ended swap is never held: its folded progress and its
 * outcome go at once. Real Redis, the real SlackPoster, and the Slack emulator with Slack's own limits.
 */
const CHANNEL = "C0LLMOPS01";
const TOKEN = "xoxb-1-busy-channel";
let store: Store;
let slack: SlackEmulator;
let poster: SlackPoster;

useRedisServer((client) => {
  store = new Store(client);
});

beforeAll(async () => {
  slack = await startSlackEmulator({ botToken: TOKEN, signingSecret: "0123456789abcdef0123" });
  const client = new WebClient(TOKEN, { slackApiUrl: slack.apiUrl });
  poster = new SlackPoster(client, [], createLogger({ level: "silent" }));
});
afterAll(async () => {
  await slack?.stop();
});

const deps = () => ({
  store,
  poster,
  cardUpdateSeconds: 1,
  log: createLogger({ level: "silent" }),
  clock: systemClock,
});

const PROGRESS: SwapEvent[] = [
  { type: "downloaded", files: 19, bytes: 16_000_000_000 },
  { type: "built", commit: "0123456789abcdef", version: "0.5.10" },
  { type: "switched", from: "sglang-old.service", to: "sglang-new.service" },
];

/** A running swap (at the health wait) with three progress events its reporter has not shown. */
async function runningSwap(over: Parameters<typeof aRecord>[0] = {}) {
  const record = aRecord({ channel: CHANNEL, step: "health", ...over });
  await store.swaps.save(record);
  const at = new Date().toISOString();
  await store.swaps.save(record, { events: PROGRESS.map((e) => ({ ...e, at }) as never) });
  return record;
}

/** Other posts of this process waiting for their turn in the channel; resolves when they are all out. */
function fillChannel(count: number): Promise<unknown> {
  return Promise.all(
    Array.from({ length: count }, (_, i) =>
      poster.post(CHANNEL, { text: `another swap's progress ${i}`, blocks: [] }),
    ),
  );
}

const threadOf = async (swapId: string) => {
  const { cardTs } = await store.reports.get(swapId);
  if (cardTs === undefined) throw new Error(`swap ${swapId} has no card`);
  return slack.thread(CHANNEL, cardTs);
};

describe("a busy channel", () => {
  it("holds a running swap's progress while the queue is long, then posts it as one message", async () => {
    const record = await runningSwap();
    const others = fillChannel(DEFER_AT_BACKLOG + 3);
    expect(poster.postBacklog(CHANNEL)).toBeGreaterThanOrEqual(DEFER_AT_BACKLOG);
    const first = await reportSwap(record.id, deps());
    expect(first).toMatchObject({ kind: "later", why: "card" });
    // the card was posted (a swap's first card goes ahead), the thread has nothing yet
    expect(await threadOf(record.id)).toEqual([]);
    expect((await store.reports.get(record.id)).cursor).toBe(0);

    await others;
    expect(poster.postBacklog(CHANNEL)).toBe(0);
    expect(await reportSwap(record.id, deps())).toEqual({ kind: "done" });
    const thread = await threadOf(record.id);
    expect(thread).toHaveLength(1);
    const lines = thread[0]!.text.split("\n");
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^📦 Download complete: 19 files/);
    expect(lines[1]).toMatch(/^🔧 Engine built: commit `0123456789ab`/);
    expect(lines[2]).toMatch(/^🔀 Switched: `sglang-old.service` stopped/);
    expect((await store.reports.get(record.id)).cursor).toBe(3);
    // looked at again: nothing is posted twice
    await reportSwap(record.id, deps());
    expect(await threadOf(record.id)).toHaveLength(1);
  }, 60_000);

  it("never holds an ended swap: its card first, then its progress and its outcome, ahead of the queue, one post a run", async () => {
    const record = await runningSwap();
    const at = new Date().toISOString();
    const ended = { ...record, step: "done" as const, outcome: "succeeded" as const, finishedAt: at };
    await store.swaps.save(ended, { events: [{ type: "finished", outcome: "succeeded", at } as never] });
    const others = fillChannel(DEFER_AT_BACKLOG + 3);
    // the card says how the swap ended before its thread catches up; the run posts once, then gives its
    // reporter back (a swap that has just ended may be waiting for one), and the next run goes on
    const results = [await reportSwap(record.id, deps())];
    const { cardTs } = await store.reports.get(record.id);
    expect(slack.messages(CHANNEL).find((m) => m.ts === cardTs)?.text).toMatch(/Swapped|succeeded|✅/);
    expect(await threadOf(record.id)).toHaveLength(1);
    while (results.at(-1)?.kind === "turn") results.push(await reportSwap(record.id, deps()));
    expect(results).toEqual([{ kind: "turn", ended: true }, { kind: "done" }]);
    // both of its posts went while the other posts still waited
    expect(poster.postBacklog(CHANNEL)).toBeGreaterThan(0);
    const thread = await threadOf(record.id);
    expect(thread.map((m) => m.text.split("\n")[0])).toEqual([
      expect.stringMatching(/^📦 Download complete/),
      expect.stringMatching(/Swapped|succeeded|✅/),
    ]);
    expect(thread[0]!.text.split("\n")).toHaveLength(3);
    await others;
  }, 60_000);

  it("leaves a decided plan's ✅/❌ while reactions.remove (Tier 2) has a queue, and takes them back once the swap ended", async () => {
    const record = aRecord({ channel: CHANNEL, step: "prepare", plan: qwenPlan() });
    await store.swaps.save(record);
    const at = new Date().toISOString();
    const planHash = "plan-1";
    const requested = { type: "approval-requested", planHash, expiresAt: at, at };
    await store.swaps.save(record, { events: [requested as never] });
    expect(await reportSwap(record.id, deps())).toEqual({ kind: "done" });
    const planTs = (await store.reports.get(record.id)).plans[planHash]!;
    // other swaps' withdrawals wait at the pacer (Tier 2: a burst of 3, then one every 3 s)
    const others = Promise.all(
      Array.from({ length: 6 }, () => poster.unreact(CHANNEL, planTs, "thumbsup", true)),
    );
    expect(poster.unreactBacklog()).toBeGreaterThan(0);
    const decided = {
      type: "approval-decided",
      planHash,
      approved: true,
      by: "U0ALICE001",
      via: "reaction",
      at,
    };
    await store.swaps.save(record, { events: [decided as never] });
    expect(await reportSwap(record.id, deps())).toEqual({ kind: "done" });
    // the run did not wait for the queue: the plan says approved, the bot's ✅/❌ are still there
    const planNow = async () => slack.message(CHANNEL, planTs);
    expect((await planNow())?.text).toMatch(/approved/i);
    expect((await planNow())?.reactions.map((r) => r.name).sort()).toEqual(["white_check_mark", "x"]);
    expect((await store.reports.get(record.id)).unreacts).toEqual([
      { ts: planTs, name: "white_check_mark" },
      { ts: planTs, name: "x" },
    ]);
    await others;
    const ended = { ...record, step: "done" as const, outcome: "succeeded" as const, finishedAt: at };
    await store.swaps.save(ended, { events: [{ type: "finished", outcome: "succeeded", at } as never] });
    expect(await reportSwap(record.id, deps())).toEqual({ kind: "done" });
    expect((await store.reports.get(record.id)).unreacts).toEqual([]);
    expect((await planNow())?.reactions).toEqual([]);
  }, 60_000);

  it("posts each progress message alone when the channel is quiet", async () => {
    const record = aRecord({ channel: CHANNEL, step: "prepare" });
    await store.swaps.save(record);
    for (const event of PROGRESS) {
      await store.swaps.save(record, { events: [{ ...event, at: new Date().toISOString() } as never] });
      await reportSwap(record.id, deps());
    }
    expect((await threadOf(record.id)).map((m) => m.text.split("\n").length)).toEqual([1, 1, 1]);
  }, 60_000);
});
