import { beforeAll, describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import { addSimModel, type SwapDriver } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";
import { expectRolledBackOnTheHost, expectRolledBackStory } from "../support/rolled-back.ts";
import { useSwapBench } from "../support/swap-bench.ts";
import { untilThreadComplete } from "../support/thread-story.ts";

/**
 * Slack down (chat.update and chat.postMessage answer 503) from the switch on, for as long as the swaps
 * take and at least OUTAGE_MIN_MS: every stage from the switch to the end runs during the outage — for a
 * swap that succeeds, and side by side for one whose new model answers NaN and is rolled back. No stage
 * and no rollback waits for Slack — Slack comes back only once both swaps are over as the hosts say, so a
 * stage that waited would never end — and once it is, the cards and the threads catch up: the whole
 * story, in order, each milestone once.
 */
/** Longer than the reporter's backoff takes to reach its cap (1+2+4+8+16 s, report-pace.ts) plus a wait at the cap (30 s). */
const OUTAGE_MIN_MS = 70_000;
/** The outage's window as opened: what ends it is slackBack(), once both swaps are over. */
const OUTAGE_WINDOW_MS = 5 * 60_000;
let bench: Bench;
let swaps: SwapDriver;
let nanModel: string;
useSwapBench(
  {
    hosts: ["gpu-1", "gpu-nan"].map((name) => ({
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
  nanModel = addSimModel(bench, "outage-nan");
  // only the new model answers NaN: the old one serves again once the rollback starts it
  await bench.host("gpu-nan").sim.setFault("sglang", { models: { "outage-nan": { mode: "nan" } } });
});

let latestOutage = 0;
const over = new Set<string>();
let back: Promise<void> | undefined;

/**
 * Slack comes back once both swaps are over on their hosts, and no sooner than OUTAGE_MIN_MS after the
 * later of the two outages began.
 */
async function slackBack(id: string): Promise<void> {
  over.add(id);
  await until(() => over.size === 2, {
    what: "both swaps to be over on their hosts",
    timeoutMs: OUTAGE_WINDOW_MS,
  });
  back ??= (async () => {
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, latestOutage + OUTAGE_MIN_MS - Date.now())),
    );
    bench.slack.endOutage();
  })();
  await back;
}

/**
 * A swap of `model` on `host`, approved and held at the switch's `systemctl enable --now`; Slack goes
 * down, then the switch goes on. Resolves with the swap's id. (Each swap opens its own window; the two
 * overlap, and a call is refused while any is open.)
 */
async function swapIntoTheOutage(model: string, host: string): Promise<{ id: string }> {
  const { sim } = bench.host(host);
  await sim.hold("systemctl", " enable --now");
  const card = await swaps.request(model, host);
  const id = swaps.swapId(card.ts);
  await swaps.approve(card.ts);
  await sim.waitHeld("systemctl");
  latestOutage = Date.now();
  bench.slack.failFor(["chat.update", "chat.postMessage"], "service_unavailable", {
    ms: OUTAGE_WINDOW_MS,
    status: 503,
  });
  await sim.release("systemctl");
  return { id };
}

describe.concurrent("a Slack outage from the switch on, longer than the reporter's longest backoff", () => {
  // side by side: two hosts, two swaps, in the same outage
  it(
    "the swap ends as the host says while Slack is down; the thread catches up when it is back",
    async () => {
      const model = addSimModel(bench, "outage-proof");
      const { sim, unit } = bench.host("gpu-1");
      const { id } = await swapIntoTheOutage(model, "gpu-1");

      // the host decides, not Slack: switched, healthy, sane, benchmarked and finished, all during the outage
      const record = await swaps.untilRecord(id, (r) => r.outcome !== undefined, {
        what: "the swap's outcome",
        timeoutMs: 110_000,
      });
      expect(record.outcome, record.reason).toBe("succeeded");
      expect(await sim.unitState(record.plan!.unitName)).toMatchObject({
        activeState: "active",
        unitFileState: "enabled",
      });
      expect(await sim.unitState(unit)).toMatchObject({ activeState: "inactive" });
      expect(await (await swaps.store()).locks.hostHolder("gpu-1")).toBeUndefined();
      // Slack was really asked, and refused, meanwhile
      const refused = bench.slack.calls().filter((c) => c.status === 503).length;
      expect(refused).toBeGreaterThan(0);

      // Slack is back: the card reads Swapped and the thread has it all (the reporter backs off at most 30 s)
      await slackBack(id);
      await untilThreadComplete(bench, swaps, id, { timeoutMs: 90_000 });
    },
    5 * 60_000,
  );

  it(
    "a swap whose new model answers NaN is rolled back while Slack is down; its thread catches up when it is back",
    async () => {
      const { id } = await swapIntoTheOutage(nanModel, "gpu-nan");

      // the host decides, not Slack: switched, healthy, insane, rolled back, the old unit healthy again and
      // the host free, all during the outage
      await expectRolledBackOnTheHost(bench, swaps, "gpu-nan", id, { timeoutMs: 110_000 });
      // Slack was asked, and refused, meanwhile. Which swap's report the reporter tries while Slack is
      // down is its own pacing (it backs off up to 30 s, and two swaps share the channel): what this test
      // holds it to is the catch-up below, for this swap's card and thread.
      expect(bench.slack.calls().some((c) => c.status === 503)).toBe(true);

      // Slack is back: the card reads Rolled back, and the thread tells the failure, the rollback and the end
      await slackBack(id);
      await expectRolledBackStory(bench, swaps, id, "sanity", { timeoutMs: 90_000 });
    },
    5 * 60_000,
  );
});
