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
