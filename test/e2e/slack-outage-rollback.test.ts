import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import { CHANNEL } from "../../testbench/bench.ts";
import { addSimModel, type SwapDriver, waitForLog } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";
import { expectRolledBackOnTheHost, expectRolledBackStory } from "../support/rolled-back.ts";
import { useSwapBench } from "../support/swap-bench.ts";
import type { FailedStage } from "../support/thread-story.ts";

/**
 * Slack failing never decides a swap that rolls back, either: the host does. The new model fails on the
 * host — it answers NaN (the sanity check fails; the bench's NVFP4-on-sm_120 behaviour) or its unit
 * crashes on start (the health wait fails) — while Slack refuses the card's edit and a thread post once
 * (internal_error), or someone deletes the card (message_not_found from then on), at the stage that
 * failed or during the rollback. Each swap still ends rolled back: the old unit serves and is enabled
 * again, the new one is off, the host is free, the job is done; and once Slack answers, one card's thread
 * tells the whole story in order, each milestone once, ending with the outcome, its code and what to try.
 * (A two-minute outage during a rollback: slack-outage-long.test.ts.)
 */
const FAILURES = ["sanity", "health"] as const satisfies readonly FailedStage[];
const hostName = (fault: string, failed: FailedStage) => `${fault}-${failed}`;
/** What the new model does on the host: answers NaN (sanity fails), or crashes on start (health fails). */
const MODE = { sanity: "nan", health: "crash-on-start" } as const;
/** Slack refusing the bot itself (the optional case): the channel, then the token. */
const DENIED = "denied-sanity";

let bench: Bench;
let swaps: SwapDriver;
const models = {} as Record<FailedStage, string>;
useSwapBench(
  {
    hosts: [
      ...["once", "gone"].flatMap((fault) => FAILURES.map((failed) => hostName(fault, failed))),
      DENIED,
    ].map((name) => ({
      name,
      gpus: "8x-rtx-pro-6000-blackwell" as const,
      serving: { preset: "qwen3-fp8-dense" as const },
    })),
    startBot: true,
  },
  (b, s) => {
    bench = b;
    swaps = s;
  },
);

beforeAll(async () => {
  models.sanity = addSimModel(bench, "answers-nan");
  models.health = addSimModel(bench, "crashes-on-start");
  // only the new model fails: the old one serves again once the rollback starts it
  for (const { sim } of bench.hosts.values()) {
    await sim.setFault("sglang", {
      models: { "answers-nan": { mode: MODE.sanity }, "crashes-on-start": { mode: MODE.health } },
    });
  }
});

/**
 * A swap to the failing model on `host`, approved, with one fault injected while it is at the failing
 * stage and another during the rollback. Each is held there by the host command it runs: the sanity
 * prompts or the health wait's poll, then the rollback's start of the old unit (by then the record says
 * `rollback`, and the failure's thread post is due).
 */
async function swapWithFaults(
  host: string,
  failed: FailedStage,
  faults: {
    atStage: (cardTs: string, id: string) => Promise<void> | void;
    inRollback: (cardTs: string, id: string) => Promise<void> | void;
  },
): Promise<{ id: string; cardTs: string }> {
  const { sim, servingPort, unit } = bench.host(host);
  // the sanity prompts run curl; the health wait's poll reads the unit's journal (its probe is bash's own)
  const [stageCommand, stageHold] =
    failed === "sanity" ? ["curl", `127.0.0.1:${servingPort}/generate`] : ["journalctl", " -n 200 "];
  await sim.hold(stageCommand, stageHold);
  await sim.hold("systemctl", ` enable --now ${unit}`);
  const card = await swaps.request(models[failed], host);
  const id = swaps.swapId(card.ts);
  await swaps.approve(card.ts);
  for (const [command, step, fault] of [
    [stageCommand, failed, faults.atStage],
    ["systemctl", "rollback", faults.inRollback],
  ] as const) {
    await sim.waitHeld(command, 90_000);
    // the fault lands where it is meant to: in the failing stage, then in the rollback after it
    expect((await swaps.record(id))?.step).toBe(step);
    await fault(card.ts, id);
    await sim.release(command);
  }
  return { id, cardTs: card.ts };
}

/** Slack's calls about this swap's card and thread. */
const ours = (ts: string) => (args: { ts?: unknown; thread_ts?: unknown }) =>
  args.ts === ts || args.thread_ts === ts;

/**
 * Slack told the bot that the card at `ts` is gone: an edit of it refused (message_not_found), or a reply
 * to it turned into a channel message (a parent deleted with no replies leaves no tombstone: Slack
 * un-threads the reply, testbench/slack/web-api.ts), which the bot then took back (chat.delete).
 */
function learnedGone(ts: string): boolean {
  const calls = bench.slack.calls();
  const refusedEdit = calls.some(
    (c) => c.method === "chat.update" && c.args.ts === ts && c.error === "message_not_found",
  );
  const reply = calls.findIndex((c) => c.method === "chat.postMessage" && c.args.thread_ts === ts && c.ok);
  const takenBack = reply >= 0 && calls.slice(reply).some((c) => c.method === "chat.delete" && c.ok);
  return refusedEdit || takenBack;
}

describe.concurrent("Slack fails while a swap rolls back", () => {
  // side by side: each swap's faults are for its own card and thread
  for (const failed of FAILURES) {
    it(`${failed} fails; the card's edit and a thread post refused once there and once in the rollback: rolled back as the host says, the thread is complete`, async () => {
      const host = hostName("once", failed);
      const refuseOnce = (ts: string) => {
        bench.slack.failNext("chat.update", "internal_error", { where: ours(ts) });
        bench.slack.failNext("chat.postMessage", "internal_error", { where: ours(ts) });
      };
      const { id, cardTs } = await swapWithFaults(host, failed, {
        atStage: refuseOnce,
        inRollback: refuseOnce,
      });
      await expectRolledBackOnTheHost(bench, swaps, host, id);
      await expectRolledBackStory(bench, swaps, id, failed);
      // the refusals did happen: Slack answered internal_error to this swap's card edits and thread posts
      const refused = bench.slack.calls().filter((c) => c.error === "internal_error");
      expect(refused.filter((c) => c.method === "chat.update" && c.args.ts === cardTs)).toHaveLength(2);
      expect(
        refused.filter((c) => c.method === "chat.postMessage" && c.args.thread_ts === cardTs),
      ).toHaveLength(2);
    }, 150_000);

    it(`${failed} fails; the card deleted there, and its new card deleted in the rollback (message_not_found for good): rolled back, a third card tells the whole story`, async () => {
      const host = hostName("gone", failed);
      const deleted: string[] = [];
      const { id } = await swapWithFaults(host, failed, {
        atStage: (ts) => {
          bench.slack.deleteMessage(CHANNEL, ts);
          deleted.push(ts);
        },
        inRollback: async (_ts, id) => {
          // the reporter found the first card gone and posted another (it goes on while the rollback waits)
          const second = await until(() => swaps.cardsOf(id).find((c) => !deleted.includes(c.ts)), {
            what: `a new card for swap ${id}`,
            timeoutMs: 60_000,
          });
          bench.slack.deleteMessage(CHANNEL, second.ts);
          deleted.push(second.ts);
        },
      });
      await expectRolledBackOnTheHost(bench, swaps, host, id);
      const card = await expectRolledBackStory(bench, swaps, id, failed);
      expect(deleted).toHaveLength(2);
      expect(deleted).not.toContain(card.ts);
      // the first card is gone (a tombstone over its thread), and the bot learned each deletion from Slack
      expect(bench.slack.message(CHANNEL, deleted[0]!)?.subtype).toBe("tombstone");
      for (const ts of deleted) expect(learnedGone(ts), `Slack told the bot card ${ts} is gone`).toBe(true);
    }, 150_000);
  }

  /**
   * Slack refusing the bot itself: a channel it cannot see (channel_not_found: a private channel it was
   * removed from, or a wrong slack.channel), then its token revoked (token_revoked). Both are among the
   * errors Slack documents for chat.postMessage and chat.update
   * (https://docs.slack.dev/reference/methods/chat.postMessage, https://docs.slack.dev/reference/methods/chat.update);
   * the emulator answers any error word through failNext. Each lasts for the swap's next card edit and
   * thread post, then the channel or the token is back.
   */
  it("answers channel_not_found in the sanity check and token_revoked in the rollback: rolled back as the host says; the log says why Slack failed and the fix", async () => {
    const log = join(bench.dir, "bot.log");
    const FIX = {
      channel_not_found:
        "invite the bot to the channel (/invite @modelswap) and check slack.channel in the config",
      token_revoked: "SLACK_BOT_TOKEN is wrong or revoked: copy the Bot User OAuth Token again",
    } as const;
    const deny = (error: keyof typeof FIX) => (ts: string) => {
      for (const method of ["chat.update", "chat.postMessage"])
        bench.slack.failNext(method, error, { where: ours(ts) });
    };
    const warned = (id: string, error: string) =>
      waitForLog(
        log,
        (l) =>
          l.includes(`"swap":"${id}"`) &&
          l.includes(`"slackError":"${error}"`) &&
          l.includes("Slack refused the swap's report"),
        { what: `the reporter's warning about ${error}` },
      );
    const { id } = await swapWithFaults(DENIED, "sanity", {
      atStage: deny("channel_not_found"),
      inRollback: async (ts, id) => {
        // Slack answered again in between (both refusals spent, the reporter caught up): the next refusal
        // is a new outage, which the log tells again
        await until(
          async () =>
            bench.slack.calls().filter((c) => c.error === "channel_not_found" && ours(ts)(c.args)).length ===
              2 && (await (await swaps.store()).reports.get(id)).failures === 0,
          { what: "the reporter caught up after channel_not_found", timeoutMs: 60_000 },
        );
        deny("token_revoked")(ts);
      },
    });
    await expectRolledBackOnTheHost(bench, swaps, DENIED, id);
    for (const error of ["channel_not_found", "token_revoked"] as const) {
      const [line] = await warned(id, error);
      expect(JSON.parse(line!)).toMatchObject({
        level: 40,
        swap: id,
        host: DENIED,
        slackError: error,
        fix: FIX[error],
      });
    }
    await expectRolledBackStory(bench, swaps, id, "sanity");
  }, 150_000);
});
