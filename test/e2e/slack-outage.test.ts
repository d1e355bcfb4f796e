import { beforeAll, describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import { CHANNEL } from "../../testbench/bench.ts";
import type { SimGpuHost } from "../../testbench/gpu-host/index.ts";
import { addSimModel, type SwapDriver } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";
import { useSwapBench } from "../support/swap-bench.ts";
import { untilThreadComplete } from "../support/thread-story.ts";

/**
 * Slack failing never decides a swap: the host does. At each stage from the switch on, Slack refuses the
 * card's edit and the next thread post once (internal_error), or someone deletes the card
 * (message_not_found from then on). Each swap still ends as the host says — the healthy new model
 * stays, the host is free for the next swap — and once Slack answers, one card's thread tells the whole
 * story in order, each milestone once. (A two-minute outage: slack-outage-long.test.ts.)
 */
const STAGES = ["switch", "health", "sanity", "benchmark", "finish"] as const;
type Stage = (typeof STAGES)[number];
const hostName = (fault: string, stage: Stage) => `${fault}-${stage}`;

let bench: Bench;
let swaps: SwapDriver;
let model: string;
useSwapBench(
  {
    hosts: ["once", "gone", "limited"].flatMap((fault) =>
      (fault === "limited" ? (["switch"] as const) : STAGES).map((stage) => ({
        name: hostName(fault, stage),
        gpus: "8x-rtx-pro-6000-blackwell" as const,
        serving: { preset: "qwen3-fp8-dense" as const },
      })),
    ),
    startBot: true,
  },
  (b, s) => {
    bench = b;
    swaps = s;
  },
);

beforeAll(() => {
  model = addSimModel(bench, "slack-proof");
});

/**
 * The command that begins each stage on the host, held so the fault lands while the swap is at that
 * stage. The finish runs no command on the host: Slack is slowed instead, so the fault lands between the
 * outcome's save and its report.
 */
function stageHold(sim: SimGpuHost, port: number, stage: Stage): [command: string, text: string] | undefined {
  switch (stage) {
    case "switch":
      return ["systemctl", " enable --now"];
    case "health":
      // the health wait's poll reads the unit's journal each time (its probe is asked by bash, no curl)
      return ["journalctl", " -n 200 "];
    case "sanity":
      return ["curl", `127.0.0.1:${port}/generate`];
    case "benchmark":
      return ["python", "sglang.bench_serving"];
    case "finish":
      void sim;
      return undefined;
  }
}

/** A swap on `host`, approved, with `fault` injected while it is at `stage`; resolves with its id and first card. */
async function swapWithFault(host: string, stage: Stage, fault: (cardTs: string) => Promise<void>) {
  const { sim, servingPort } = bench.host(host);
  const hold = stageHold(sim, servingPort, stage);
  if (hold !== undefined) await sim.hold(...hold);
  const card = await swaps.request(model, host);
  const id = swaps.swapId(card.ts);
  if (stage === "finish") {
    // Slack slow: the outcome is saved well before the reporter gets to it
    bench.slack.setApiDelay("chat.update", 800);
    bench.slack.setApiDelay("chat.postMessage", 800);
  }
  await swaps.approve(card.ts);
  if (hold !== undefined) {
    await sim.waitHeld(hold[0], 60_000);
    await fault(card.ts);
    await sim.release(hold[0]);
  } else {
    await swaps.untilRecord(id, (r) => r.outcome !== undefined, { what: "the swap's outcome saved" });
    await fault(card.ts);
    bench.slack.setApiDelay("chat.update", 0);
    bench.slack.setApiDelay("chat.postMessage", 0);
  }
  return { id, cardTs: card.ts };
}

/** What the host says: the new unit serves and is enabled, the old one is off, the host is free. */
async function expectSwappedOnTheHost(host: string, id: string): Promise<void> {
  const record = await swaps.untilRecord(id, (r) => r.outcome !== undefined, {
    what: "the swap's outcome",
    timeoutMs: 60_000,
  });
  expect(record.outcome, record.reason).toBe("succeeded");
  const { sim, unit } = bench.host(host);
  expect(await sim.unitState(record.plan!.unitName)).toMatchObject({
    activeState: "active",
    unitFileState: "enabled",
  });
  expect(await sim.unitState(unit)).toMatchObject({ activeState: "inactive", unitFileState: "disabled" });
  expect(await (await swaps.store()).locks.hostHolder(host)).toBeUndefined();
}

describe.concurrent("Slack refuses once", () => {
  // side by side: each refusal is for its own swap's card and thread
  for (const stage of STAGES) {
    it(`refuses the card's edit and a thread post once at ${stage}: the swap ends as the host says, the thread is complete`, async () => {
      const host = hostName("once", stage);
      const { id, cardTs } = await swapWithFault(host, stage, async (ts) => {
        const ours = (args: { ts?: unknown; thread_ts?: unknown }) => args.ts === ts || args.thread_ts === ts;
        bench.slack.failNext("chat.update", "internal_error", { where: ours });
        bench.slack.failNext("chat.postMessage", "internal_error", { where: ours });
      });
      await expectSwappedOnTheHost(host, id);
      await untilThreadComplete(bench, swaps, id);
      // the refusals did happen: Slack answered internal_error to this swap's card edits and thread posts
      const refused = bench.slack.calls().filter((c) => c.error === "internal_error");
      expect(refused.some((c) => c.method === "chat.update" && c.args.ts === cardTs)).toBe(true);
    }, 90_000);
  }
});

describe.concurrent("a card deleted", () => {
  // side by side: each swap's card is its own
  for (const stage of STAGES) {
    it(`has its card deleted at ${stage} (message_not_found for good): a new card tells the whole story`, async () => {
      const host = hostName("gone", stage);
      const { id, cardTs } = await swapWithFault(host, stage, async (ts) => {
        bench.slack.deleteMessage(CHANNEL, ts);
      });
      await expectSwappedOnTheHost(host, id);
      const card = await untilThreadComplete(bench, swaps, id);
      expect(card.ts).not.toBe(cardTs);
      // the old card is gone: Slack left a tombstone over its thread
      expect(bench.slack.message(CHANNEL, cardTs)?.subtype).toBe("tombstone");
      // the bot learned it from Slack itself: an edit of the deleted card was refused
      await until(() => bench.slack.calls("chat.update").some((c) => c.error === "message_not_found"), {
        what: "a refused edit of the deleted card",
      });
    }, 90_000);
  }
});

describe("Slack rate-limits the card", () => {
  it("does not hold the switch back: a 429 with Retry-After 20 s on the card's edit delays only the card", async () => {
    const host = hostName("limited", "switch");
    const card = await swaps.request(model, host);
    const id = swaps.swapId(card.ts);
    await swaps.plan(card.ts);
    // the next card edit answers 429, Retry-After 20 s (the WebClient waits it out, then retries)
    bench.slack.forceRateLimit("chat.update", 1, 20);
    const approvedAt = Date.now();
    await swaps.approve(card.ts);
    const record = await swaps.untilRecord(id, (r) => r.switch?.done === true, {
      what: "the switch done",
      timeoutMs: 60_000,
    });
    // the switch happened while Slack still held the card's edit back: nothing waited for Slack
    expect(Date.parse(record.switch!.startedAt) - approvedAt).toBeLessThan(15_000);
    await expectSwappedOnTheHost(host, id);
    await untilThreadComplete(bench, swaps, id, { timeoutMs: 90_000 });
  }, 150_000);
});
