import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import { CHANNEL, USERS } from "../../testbench/bench.ts";
import type { SignedRequest } from "../../testbench/slack/index.ts";
import { addSimModel, type SwapDriver } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * A signed request counts once (issue #12, item 6). Slack signs `v0:<timestamp>:<body>`, and Bolt accepts
 * a signature for five minutes after its timestamp — so whoever captured one request (a proxy's log, a
 * packet capture) could send it again, byte for byte, and the bot did it again: a replayed
 * `/llm swap … --dry-run` four minutes later was a second dry run. Bolt also never looked at timestamps
 * in the future, so a request signed for an hour ahead stayed good for an hour and five minutes. Now each
 * signature is remembered in Redis for its window and a second delivery of it is refused (401), and a
 * timestamp more than five minutes ahead is refused like a stale one.
 */
let bench: Bench;
let swaps: SwapDriver;
useSwapBench({ hosts: [{ name: "gpu-1" }], startBot: true }, (b, s) => {
  bench = b;
  swaps = s;
});

const now = () => Math.floor(Date.now() / 1000);

describe("a captured signed request sent again", () => {
  it("is refused: one dry run from one request, however often it is replayed", async () => {
    const model = addSimModel(bench, "replayed-dry-run");
    const first = await bench.slack.command(USERS.alice, `swap ${model} --host gpu-1 --dry-run`, {
      channel: CHANNEL,
    });
    expect(first.status).toBe(200);
    expect(first.ackResponse?.text).toMatch(/Planning \(dry run\)/);
    const captured = first.request as SignedRequest;
    expect(captured.headers["x-slack-signature"]).toMatch(/^v0=[0-9a-f]{64}$/);
    const id = /`(sw-[^`]+)`/.exec(first.ackResponse?.text ?? "")?.[1] ?? "";
    await until(() => swaps.cardsOf(id)[0], { what: "the dry run's card" });

    const replays = [await bench.slack.resend(captured), await bench.slack.resend(captured)];
    expect(replays.map((r) => r.status)).toEqual([401, 401]);
    expect(replays.map((r) => r.body)).toEqual(["", ""]);

    // a fresh, correctly signed request of the same command is a new request, and counts
    const again = await bench.slack.command(USERS.alice, `swap ${model} --host gpu-1 --dry-run`, {
      channel: CHANNEL,
    });
    expect(again.status).toBe(200);
    const dryRuns = () =>
      bench.slack
        .messages(CHANNEL)
        .filter((m) => m.thread_ts === undefined && JSON.stringify(m.blocks ?? []).includes(model));
    await until(() => dryRuns().length === 2, { what: "the second request's card" });
    const { records } = await (await swaps.store()).swaps.history({ limit: 20 });
    expect(records.filter((r) => r.request.model.repo === model)).toHaveLength(2);
  }, 60_000);

  it("is refused for a click and a reaction too (the Events API and interactivity)", async () => {
    const model = addSimModel(bench, "replayed-approval");
    const card = await swaps.request(model, "gpu-1");
    const plan = await swaps.plan(card.ts);
    const rejectOnce = await bench.slack.clickButton(
      USERS.mallory,
      CHANNEL,
      plan.ts,
      "swap_reject",
      swaps.swapId(card.ts),
    );
    expect(rejectOnce.status).toBe(200);
    expect((await bench.slack.resend(rejectOnce.request as SignedRequest)).status).toBe(401);
    const reaction = await bench.slack.react(USERS.mallory, CHANNEL, plan.ts, "x");
    expect(reaction.status).toBe(200);
    expect((await bench.slack.resend(reaction.request as SignedRequest)).status).toBe(401);
    await swaps.reject(card.ts);
    await swaps.outcome(card.ts, /Rejected/);
  }, 60_000);
});

/**
 * A captured request resent with a retry header (issue #27, item 4). `X-Slack-Retry-Num` is not signed:
 * Slack signs `v0:<timestamp>:<body>` and nothing else. The guard counted a delivery carrying it apart from
 * the first, for any request, so a captured `/llm swap … --dry-run` resent with `X-Slack-Retry-Num: 1`, 2
 * and 3 added was accepted three more times: four plans from one request. Slack retries Events API
 * deliveries only (an event comes again under its `event_id`); a slash command or a click that was not
 * acknowledged is an error shown to the user, never sent again. Now the retry number counts only for an
 * Events API delivery whose event id the event dedupe can key, so what it lets through is handled once.
 */
describe("a captured signed request resent with X-Slack-Retry-Num added", () => {
  const withRetry = (request: SignedRequest, n: number): SignedRequest => ({
    ...request,
    headers: { ...request.headers, "x-slack-retry-num": String(n), "x-slack-retry-reason": "http_timeout" },
  });
  const explanations = () =>
    bench.slack
      .ephemerals(CHANNEL, USERS.mallory)
      .filter((e) => e.text === "Only approvers can approve or reject swaps.").length;
  const botLog = async () =>
    (await readFile(join(bench.dir, "bot.log"), "utf8"))
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);

  it("a slash command is refused: one dry run from one request, whatever retry number is added", async () => {
    const model = addSimModel(bench, "retried-dry-run");
    const first = await bench.slack.command(USERS.alice, `swap ${model} --host gpu-1 --dry-run`, {
      channel: CHANNEL,
    });
    expect(first.ackResponse?.text).toMatch(/Planning \(dry run\)/);
    const captured = first.request as SignedRequest;

    const replays = [];
    for (const n of [1, 2, 3]) replays.push(await bench.slack.resend(withRetry(captured, n)));
    expect.soft(replays.map((r) => r.status)).toEqual([401, 401, 401]);
    expect.soft(replays.map((r) => r.body)).toEqual(["", "", ""]);

    // a fresh request of the same command counts; once its card is there, the store holds two dry runs
    const again = await bench.slack.command(USERS.alice, `swap ${model} --host gpu-1 --dry-run`, {
      channel: CHANNEL,
    });
    expect(again.ackResponse?.text).toMatch(/Planning \(dry run\)/);
    const cards = () =>
      bench.slack
        .messages(CHANNEL)
        .filter((m) => m.thread_ts === undefined && JSON.stringify(m.blocks ?? []).includes(model));
    await until(() => cards().length >= 2, { what: "the fresh request's card" });
    const { records } = await (await swaps.store()).swaps.history({ limit: 50 });
    expect(records.filter((r) => r.request.model.repo === model)).toHaveLength(2);
    expect(cards()).toHaveLength(2);

    // the log says why, in fields a search can use
    const refusals = await until(
      async () => {
        const lines = (await botLog()).filter(
          (l) => l.refused === "replay" && l.kind === "slash command" && l.retryNum === "3",
        );
        return lines.length > 0 ? lines : undefined;
      },
      { what: "the refusal of the replayed command in the bot's log" },
    );
    expect(refusals[0]?.msg).toMatch(/X-Slack-Retry-Num.*not signed.*Slack retries only Events API/);
  }, 60_000);

  it("a button click is refused: one answer from one click", async () => {
    const model = addSimModel(bench, "retried-click");
    const card = await swaps.request(model, "gpu-1");
    const plan = await swaps.plan(card.ts);
    const before = explanations();
    const click = await bench.slack.clickButton(
      USERS.mallory,
      CHANNEL,
      plan.ts,
      "swap_reject",
      swaps.swapId(card.ts),
    );
    expect(click.status).toBe(200);
    const captured = click.request as SignedRequest;
    const replays = [];
    for (const n of [1, 2, 3]) replays.push(await bench.slack.resend(withRetry(captured, n)));
    expect.soft(replays.map((r) => r.status)).toEqual([401, 401, 401]);

    // a fresh click after the replays: once its answer is there, mallory was answered twice, not five times
    const fresh = await bench.slack.clickButton(
      USERS.mallory,
      CHANNEL,
      plan.ts,
      "swap_reject",
      swaps.swapId(card.ts),
    );
    expect(fresh.status).toBe(200);
    await until(() => explanations() >= before + 2, { what: "the answer to mallory's fresh click" });
    expect.soft(explanations()).toBe(before + 2);
    expect(await swaps.decision(swaps.swapId(card.ts))).toBeUndefined();
    await swaps.reject(card.ts);
    await swaps.outcome(card.ts, /Rejected/);
  }, 60_000);

  it("an event: Slack's retry numbers pass once each and the event is handled once; a keyless event is not retried", async () => {
    const model = addSimModel(bench, "retried-event");
    const card = await swaps.request(model, "gpu-1");
    const plan = await swaps.plan(card.ts);
    const id = swaps.swapId(card.ts);
    const reaction = (name: string) => ({
      type: "reaction_added",
      user: USERS.mallory,
      reaction: name,
      item_user: plan.user ?? "",
      item: { type: "message", channel: CHANNEL, ts: plan.ts },
    });
    const before = explanations();

    // an event as Slack sends it: its retries (1..3, Slack's whole range) pass the guard, each once, and
    // meet the event-id dedupe; a retry number Slack never sends does not make the bytes new
    const first = await bench.slack.event(reaction("x"), { eventId: "Ev0REPLAYRETRY1" });
    expect(first.status).toBe(200);
    const captured = first.request as SignedRequest;
    const retries = [];
    for (const n of [1, 2, 3, 1, 9]) retries.push(await bench.slack.resend(withRetry(captured, n)));
    expect.soft(retries.map((r) => r.status)).toEqual([200, 200, 200, 401, 401]);

    // an event whose id the dedupe cannot key (Slack's ids are letters and digits): its retry number
    // does not count, since nothing else would stop the retry from being handled again
    const keyless = await bench.slack.event(reaction("negative_squared_cross_mark"), {
      eventId: "Ev0-NOT-A-SLACK-ID",
    });
    expect(keyless.status).toBe(200);
    const keylessRetry = await bench.slack.resend(withRetry(keyless.request as SignedRequest, 1));
    expect.soft(keylessRetry.status).toBe(401);

    // a fresh reaction after all of that: once its answer is there, mallory was answered three times
    // (the captured event, the keyless one, the fresh one), each once
    const fresh = await bench.slack.event(reaction("heavy_check_mark"));
    expect(fresh.status).toBe(200);
    await until(() => explanations() >= before + 3, { what: "the answer to mallory's fresh reaction" });
    expect.soft(explanations()).toBe(before + 3);
    expect(await swaps.decision(id)).toBeUndefined();
    await swaps.reject(card.ts);
    await swaps.outcome(card.ts, /Rejected/);
  }, 60_000);
});

describe("a request's timestamp", () => {
  it("more than five minutes ahead is refused; a clock a minute ahead is fine", async () => {
    const hourAhead = await bench.slack.command(USERS.alice, "help", { timestamp: now() + 3600 });
    expect(hourAhead.status).toBe(401);
    const sixMinutesAhead = await bench.slack.command(USERS.alice, "help", { timestamp: now() + 360 });
    expect(sixMinutesAhead.status).toBe(401);
    const minuteAhead = await bench.slack.command(USERS.alice, "help", { timestamp: now() + 60 });
    expect(minuteAhead.status).toBe(200);
    const fourMinutesAgo = await bench.slack.command(USERS.alice, "help", { timestamp: now() - 240 });
    expect(fourMinutesAgo.status).toBe(200);
    const stale = await bench.slack.command(USERS.alice, "help", { timestamp: now() - 360 });
    expect(stale.status).toBe(401);
    const log = join(bench.dir, "bot.log");
    await until(async () => /timestamp is more than 5 minutes ahead/.test(await readFile(log, "utf8")), {
      what: "the refusal of the future timestamp in the bot's log",
    });
  });
});
