import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuditLog } from "../../src/store/audit-log.ts";
import type { Store } from "../../src/store/store.ts";
import { type Bench, CHANNEL, QUICK_BENCH, startBench, USERS } from "../../testbench/bench.ts";
import { makeModel } from "../../testbench/hub/index.ts";
import type { JsonObject, SlackMessage } from "../../testbench/slack/index.ts";
import { SwapDriver } from "../../testbench/swap-driver.ts";

/**
 * Slack delivers at least once: events come again with the same `event_id` and `X-Slack-Retry-Num`,
 * people double-click and re-react, and anyone can POST to the Request URL. Whatever arrives, a swap is
 * requested once, approved once and switched once, and unsigned or stale requests change nothing. The
 * real bot on the bench: Bolt's HTTP receiver, BullMQ on a real Redis, SSH into simulated GPU hosts.
 */
const MODEL = "sim-org/open-llama-1B";
const APPROVE = "white_check_mark";
let bench: Bench;
let redis: Redis;
let audit: AuditLog;
let store: Store;
let swaps: SwapDriver;
/** How many commands each host had run before the bot started (the bench's own setup). */
const setupCalls = new Map<string, number>();

beforeAll(async () => {
  bench = await startBench({
    ...QUICK_BENCH,
    swaps: { pollSeconds: 0.3, cardUpdateSeconds: 1 },
    hosts: ["retried", "clicked", "toggled"].map((name) => ({
      name,
      gpus: "8x-rtx-pro-6000-blackwell" as const,
      serving: { preset: "qwen3-fp8-dense" as const },
    })),
  });
  bench.hub.addModel(makeModel("llama-bf16-small", { id: MODEL, gated: false }));
  for (const [name, host] of bench.hosts) setupCalls.set(name, (await host.sim.calls()).length);
  await bench.startBot();
  redis = new Redis(bench.redis.url);
  swaps = new SwapDriver(bench);
  store = await swaps.store();
  audit = store.audit;
}, 120_000);

afterAll(async () => {
  await swaps?.close();
  redis?.disconnect();
  await bench?.stop();
});

/** Top-level cards about one host (its swaps' live cards; the broadcast outcome is a thread reply). */
function cardsOf(host: string): SlackMessage[] {
  return bench.slack
    .messages(CHANNEL)
    .filter((m) => m.thread_ts === undefined && m.text.includes(`→ ${host}`));
}

/** The `reaction_added` event Slack sends when `user` reacts `name` to a message. */
function reactionEvent(
  type: "reaction_added" | "reaction_removed",
  user: string,
  ts: string,
  name = APPROVE,
) {
  return {
    type,
    user,
    reaction: name,
    item_user: bench.slack.message(CHANNEL, ts)?.user ?? "",
    item: { type: "message", channel: CHANNEL, ts },
  } satisfies JsonObject;
}

/**
 * Deliveries of one event under one event id: 0 is Slack's first delivery, 1..3 its retries
 * (`X-Slack-Retry-Num`); sent all at once or one after another. Every one is acknowledged.
 */
async function deliver(event: JsonObject, eventId: string, attempts: number[], together: boolean) {
  const send = (retryNum: number) =>
    bench.slack.event(event, { eventId, ...(retryNum === 0 ? {} : { retryNum }) });
  const results = [];
  if (together) results.push(...(await Promise.all(attempts.map(send))));
  else for (const retryNum of attempts) results.push(await send(retryNum));
  expect(results.map((r) => r.status)).toEqual(attempts.map(() => 200));
}

/**
 * What a user and the host must have seen after one swap, whatever Slack delivered: one card, one plan,
 * one request and one approval in the audit stream, one `disable --now` of the old unit and one
 * `enable --now` of the new one, one broadcast "Swapped".
 */
async function expectExactlyOnce(hostName: string, card: SlackMessage, approver: string): Promise<void> {
  // the final line is the last thing a swap posts; the card says how it ended just before
  await swaps.finalLine(card.ts, 60_000);
  const ended = await swaps.outcome(card.ts, /Swapped|Rolled back|Failed|Rejected|expired|Cancelled/, 30_000);
  expect(ended.text).toMatch(/✅ Swapped/);
  const id = swaps.swapId(card.ts);
  expect(cardsOf(hostName)).toHaveLength(1);
  expect(swaps.plansOf(card.ts)).toHaveLength(1);
  expect(swaps.plansOf(card.ts)[0]?.text).toMatch(/: approved$/);
  const broadcasts = bench.slack.thread(CHANNEL, card.ts).filter((m) => m.reply_broadcast === true);
  expect(broadcasts).toHaveLength(1);
  expect(broadcasts[0]?.text).toMatch(/now serves/);

  const events = await audit.read({ swap: id, limit: 200 });
  const kinds = (kind: string) => events.filter((e) => e.kind === kind);
  expect(kinds("request")).toHaveLength(1);
  expect(kinds("approval").map((e) => e.who)).toEqual([approver]);
  expect(kinds("rejection")).toEqual([]);
  expect(kinds("outcome")).toHaveLength(1);

  const record = await swaps.record(id);
  expect(record?.outcome).toBe("succeeded");
  expect(record?.decision).toMatchObject({ approved: true, by: approver });
  expect((await store.swaps.history({ host: hostName, limit: 10 })).records.map((r) => r.id)).toEqual([id]);

  const host = bench.host(hostName);
  const calls = (await host.sim.calls()).slice(setupCalls.get(hostName));
  const systemctl = calls.filter((c) => c.cmd === "systemctl");
  const verb = (v: string) => systemctl.filter((c) => c.argv[0] === v).map((c) => c.argv.join(" "));
  expect(verb("enable")).toEqual([`enable --now ${record?.plan?.unitName}`]);
  expect(verb("disable")).toEqual([`disable --now ${host.unit}`]);
  expect(await host.sim.unitState(record!.plan!.unitName)).toMatchObject({ activeState: "active" });
}

describe("Slack deliveries", () => {
  /** The card of the swap the first test queues, and its id: later tests deliver its decisions. */
  let retried: SlackMessage;
  let retriedId: string;

  it("a /llm swap submitted twice at once queues one swap; the second is told the host is busy", async () => {
    const jobsBefore = await bench.queuedJobCount();
    const acks = await Promise.all(
      [0, 1].map(() =>
        bench.slack.command(USERS.alice, `swap ${MODEL} --host retried`, { channel: CHANNEL }),
      ),
    );
    const texts = acks.map((a) => a.ackResponse?.text ?? "");
    const queued = texts.filter((t) => t.includes("Swap queued"));
    const busy = texts.filter((t) => t.includes("busy"));
    expect(queued).toHaveLength(1);
    expect(busy).toHaveLength(1);
    const id = /swap `(sw-[a-z0-9-]+)`/.exec(queued[0]!)?.[1];
    expect(id).toBeDefined();
    // the refusal names the swap that holds the host and says what to do
    expect(busy[0]).toContain(`retried is busy: swap \`${id}\``);
    expect(busy[0]).toContain("One swap per host at a time");
    expect(busy[0]).toMatch(/was requested just now|\(sim-org\/open-llama-1B\) is at stage \*[a-z]+\*/);
    expect(await bench.queuedJobCount()).toBe(jobsBefore + 1);
    const card = await bench.slack.waitFor(() => swaps.cardsOf(id!)[0], { what: `the card of ${id}` });
    retried = card;
    retriedId = id!;
    expect(cardsOf("retried")).toHaveLength(1);
  });

  it("forged and stale commands, events and clicks get 401 and change nothing", async () => {
    const plan = await swaps.plan(retried.ts);
    const stale = Math.floor(Date.now() / 1000) - 6 * 60;
    const forged = { signWith: "not-the-signing-secret" };
    const jobs = await bench.queuedJobCount();
    const records = (await store.swaps.history({ limit: 50 })).records.length;
    const topLevel = bench.slack.messages(CHANNEL).length;
    const ephemeralCalls = bench.slack.calls("chat.postEphemeral").length;
    const responsePosts = bench.slack.responses().length;

    const results = [
      ...(await Promise.all(
        [forged, { timestamp: stale }].flatMap((opts) => [
          bench.slack.command(USERS.alice, `swap ${MODEL} --host toggled`, { channel: CHANNEL, ...opts }),
          bench.slack.command(USERS.alice, "status", { channel: CHANNEL, ...opts }),
          bench.slack.event(reactionEvent("reaction_added", USERS.bob, plan.ts), opts),
          bench.slack.clickButton(USERS.bob, CHANNEL, plan.ts, "swap_approve", undefined, opts),
        ]),
      )),
    ];
    expect(results.map((r) => r.status)).toEqual(Array(8).fill(401));
    for (const r of results) if ("responses" in r) expect(r.responses()).toEqual([]);

    // nothing queued, recorded, posted or decided
    expect(await bench.queuedJobCount()).toBe(jobs);
    expect((await store.swaps.history({ limit: 50 })).records.length).toBe(records);
    expect(bench.slack.messages(CHANNEL)).toHaveLength(topLevel);
    expect(cardsOf("toggled")).toEqual([]);
    expect(bench.slack.calls("chat.postEphemeral")).toHaveLength(ephemeralCalls);
    expect(bench.slack.responses()).toHaveLength(responsePosts);
    expect((await swaps.record(retriedId))?.planHash).toBeDefined();
    expect(await swaps.decision(retriedId)).toBeUndefined();
    expect((await audit.read({ swap: retriedId, limit: 100 })).map((e) => e.kind)).not.toContain("approval");
    expect(bench.slack.message(CHANNEL, plan.ts)?.text).toMatch(/awaiting approval$/);
  });

  // Each case has a host and a swap of its own; they run side by side to keep the file short.
  describe.concurrent("exactly one swap, one approval, one switch", () => {
    it("when Slack delivers a ✅ four times (retries at once, then one after another)", async () => {
      const plan = await swaps.plan(retried.ts);
      const bobApproves = reactionEvent("reaction_added", USERS.bob, plan.ts);
      await deliver(bobApproves, "Ev0BOBAPPR01", [0, 1, 2, 3], true);
      await deliver(bobApproves, "Ev0BOBAPPR01", [0, 1, 2, 3], false);
      // someone who may not approve reacts too; the first delivery never reached the bot, so the first
      // retry is handled, and the later ones are not: one explanation, not three
      const malloryApproves = reactionEvent("reaction_added", USERS.mallory, plan.ts);
      await deliver(malloryApproves, "Ev0MALLORY01", [1, 2, 3], false);
      // the event is acked before it is handled: the explanation comes after the 200s
      await bench.slack.waitFor(() => bench.slack.ephemerals(CHANNEL, USERS.mallory).length > 0, {
        what: "the explanation to mallory",
      });
      await expectExactlyOnce("retried", retried, USERS.bob);
      expect(bench.slack.ephemerals(CHANNEL, USERS.mallory).map((e) => e.text)).toEqual([
        "Only approvers can approve or reject swaps.",
      ]);
      expect(swaps.toldAbout(retriedId, USERS.bob)).toEqual([]);
    });

    it("when Approve is double-clicked, and two approvers click at once", async () => {
      const card = await swaps.request(MODEL, "clicked");
      const id = swaps.swapId(card.ts);
      const plan = await swaps.plan(card.ts);
      const clicks = await Promise.all([
        bench.slack.clickButton(USERS.bob, CHANNEL, plan.ts, "swap_approve"),
        bench.slack.clickButton(USERS.bob, CHANNEL, plan.ts, "swap_approve"),
        bench.slack.clickButton(USERS.dave, CHANNEL, plan.ts, "swap_approve"),
      ]);
      expect(clicks.map((c) => c.status)).toEqual([200, 200, 200]);
      // the button handler acks first and records the decision after: wait for it
      const winner = (await swaps.untilDecided(id)).by;
      expect([USERS.bob, USERS.dave]).toContain(winner);
      // each click of the approver who lost is answered with who decided (after the decision, too); the
      // winner's second click changes nothing and is not answered
      const loser = winner === USERS.bob ? USERS.dave : USERS.bob;
      const lostClicks = loser === USERS.bob ? 2 : 1;
      await bench.slack.waitFor(() => swaps.toldAbout(id, loser).length >= lostClicks, {
        what: `the answer to each of ${loser}'s clicks`,
      });
      await expectExactlyOnce("clicked", card, winner);
      expect(swaps.toldAbout(id, winner)).toEqual([]);
      expect(swaps.toldAbout(id, loser)).toEqual(
        Array(lostClicks).fill(
          expect.stringMatching(new RegExp(`already approved by <@${winner}>|not waiting for a decision`)),
        ),
      );
    });

    it("when a ✅ is added, removed and added again, and a removal and a late ❌ are retried", async () => {
      const card = await swaps.request(MODEL, "toggled");
      const id = swaps.swapId(card.ts);
      const plan = await swaps.plan(card.ts);
      for (const result of [
        await bench.slack.react(USERS.bob, CHANNEL, plan.ts, APPROVE),
        await bench.slack.unreact(USERS.bob, CHANNEL, plan.ts, APPROVE),
        await bench.slack.react(USERS.bob, CHANNEL, plan.ts, APPROVE),
      ])
        expect(result.status).toBe(200);
      // the ✅ is acked before it is handled: the ❌ below is late only once bob's approval is recorded
      expect(await swaps.untilDecided(id)).toMatchObject({ approved: true, by: USERS.bob });
      // the app does not subscribe to reaction_removed; delivered anyway, it withdraws nothing
      await deliver(
        reactionEvent("reaction_removed", USERS.bob, plan.ts),
        "Ev0BOBUNRE01",
        [0, 1, 2, 3],
        true,
      );
      await deliver(
        reactionEvent("reaction_added", USERS.dave, plan.ts, "x"),
        "Ev0DAVEREJ01",
        [0, 1, 2, 3],
        true,
      );
      await bench.slack.waitFor(() => swaps.toldAbout(id, USERS.dave).length > 0, {
        what: "the answer to dave's late ❌",
      });
      await expectExactlyOnce("toggled", card, USERS.bob);
      expect(swaps.toldAbout(id, USERS.bob)).toEqual([]);
      expect(swaps.toldAbout(id, USERS.dave)).toEqual([
        expect.stringMatching(/already approved by <@U0BOB00001>|not waiting for a decision/),
      ]);
    });
  });
});
