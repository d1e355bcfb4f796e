import { setTimeout as sleep } from "node:timers/promises";
import { WebClient } from "@slack/web-api";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createReportWorker } from "../../jobs/report-worker.ts";
import { systemClock } from "../../src/clock.ts";
import { createLogger } from "../../src/log.ts";
import { InFlight } from "../../src/queue/in-flight.ts";
import { REPORT_QUEUE, ReportQueue } from "../../src/queue/report-queue.ts";
import { DEFER_AT_BACKLOG } from "../../src/reporter/report-pace.ts";
import { reportSwap } from "../../src/reporter/swap-reporter.ts";
import { SlackPoster } from "../../src/slack/slack-poster.ts";
import { QUEUE_PREFIX } from "../../src/store/keys.ts";
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

let workerRedis: Redis;
useRedisServer((client, server) => {
  store = new Store(client);
  // BullMQ's workers block on their connection: a connection of their own, retrying for good
  workerRedis = new Redis(server.url, { maxRetriesPerRequest: null });
});

beforeAll(async () => {
  slack = await startSlackEmulator({ botToken: TOKEN, signingSecret: "0123456789abcdef0123" });
  const client = new WebClient(TOKEN, { slackApiUrl: slack.apiUrl });
  poster = new SlackPoster(client, [], createLogger({ level: "silent" }));
});
afterAll(async () => {
  workerRedis?.disconnect();
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
  { type: "built", commit: "0123456789abcdef", version: "0.5.10", engine: "sglang" },
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

  it("hurries the reporter that holds a swap when the swap ends: its waiting post goes before urgent posts queued after the end", async () => {
    const record = await runningSwap();
    // the channel is busy; a reporter of this process holds the swap (its lock), its post waits as routine
    const before = Promise.all(
      Array.from({ length: 3 }, (_, i) =>
        poster.post(CHANNEL, { text: `an earlier plan ${i}`, blocks: [] }, { urgent: true }),
      ),
    );
    expect(await store.reports.lock(record.id, "a-running-reporter", 30_000)).toBe(true);
    const held = poster.post(
      CHANNEL,
      { text: "the running swap's progress", blocks: [] },
      { tag: record.id },
    );
    // the swap ends: its outcome saved, then advance-swap asks for an ended look, which finds the reporter busy
    const at = new Date().toISOString();
    await store.swaps.save({ ...record, step: "done", outcome: "succeeded", finishedAt: at });
    const queue = new ReportQueue(workerRedis);
    const jobs = new Queue(REPORT_QUEUE, { connection: workerRedis, prefix: QUEUE_PREFIX });
    const worker = createReportWorker(
      workerRedis,
      { ...deps(), settings: () => ({ cardUpdateSeconds: 1 }), queue },
      { reachability: { error: () => undefined }, inFlight: new InFlight() },
      1,
    );
    try {
      await queue.soon(record.id, "ended");
      // the look ran, found the lock taken and parked itself to look again
      const deadline = Date.now() + 20_000;
      while ((await jobs.getDelayedCount()) === 0) {
        if (Date.now() > deadline) throw new Error("the ended look did not run within 20 s");
        await sleep(50);
      }
      const after = Promise.all(
        Array.from({ length: 4 }, (_, i) =>
          poster.post(CHANNEL, { text: `a later plan ${i}`, blocks: [] }, { urgent: true }),
        ),
      );
      await Promise.all([before, held, after]);
      const order = slack.messages(CHANNEL).map((m) => m.text);
      const mine = order.indexOf("the running swap's progress");
      // routine behind urgent, it would have gone after all four later plans
      expect(mine).toBeGreaterThanOrEqual(0);
      expect(mine).toBeLessThan(order.indexOf("a later plan 0"));
    } finally {
      await worker.close(true);
      await jobs.close();
      await queue.close();
      await store.reports.unlock(record.id, "a-running-reporter");
    }
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
