import { expect } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import { CHANNEL } from "../../testbench/bench.ts";
import type { SlackMessage } from "../../testbench/slack/index.ts";
import type { SwapDriver } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";
import { type FailedStage, rolledBackStory, untilThreadComplete } from "./thread-story.ts";

/** The code a swap rolled back for a failure at that stage ends with. */
const CODE: Record<FailedStage, string> = { health: "HEALTH_FAILED", sanity: "SANITY_FAILED" };

/**
 * What the host says of a rolled-back swap: its outcome is rolled_back, the old unit serves and is enabled
 * again, the new one is stopped and disabled, the host is free and the swap's job is done (neither failed
 * nor left running). Resolves once the outcome is saved (within `timeoutMs`) and all of that holds.
 */
export async function expectRolledBackOnTheHost(
  bench: Bench,
  swaps: SwapDriver,
  host: string,
  id: string,
  { timeoutMs = 90_000 } = {},
): Promise<void> {
  const record = await swaps.untilRecord(id, (r) => r.outcome !== undefined, {
    what: "the swap's outcome",
    timeoutMs,
  });
  expect(record.outcome, record.reason).toBe("rolled_back");
  expect(record.rollback).toMatchObject({ ok: true });
  const { sim, unit, servingPort } = bench.host(host);
  expect(await sim.unitState(unit)).toMatchObject({ activeState: "active", unitFileState: "enabled" });
  const fresh = await sim.unitState(record.plan!.unitName);
  expect(fresh.unitFileState).toBe("disabled");
  expect(["inactive", "failed"]).toContain(fresh.activeState);
  // the old model answers a generation again
  expect((await fetch(`http://127.0.0.1:${servingPort}/health_generate`)).status).toBe(200);
  expect(await (await swaps.store()).locks.hostHolder(host)).toBeUndefined();
  await until(async () => (await swaps.jobState(id)) === "completed", {
    what: `the job of swap ${id} completed`,
    timeoutMs: 30_000,
  });
}

/**
 * Once Slack answers: one card reads Rolled back, its thread tells the whole story of a failure at
 * `failed` in order, each milestone once and no message twice, and ends with the outcome, broadcast
 * once, saying the reason, its code and what to try — the code and the fix said nowhere else in the
 * thread. Returns the card.
 */
export async function expectRolledBackStory(
  bench: Bench,
  swaps: SwapDriver,
  id: string,
  failed: FailedStage,
  { timeoutMs = 90_000 } = {},
): Promise<SlackMessage> {
  const card = await untilThreadComplete(bench, swaps, id, {
    card: /Rolled back/,
    story: rolledBackStory(failed),
    timeoutMs,
  });
  const thread = bench.slack.thread(CHANNEL, card.ts);
  const texts = thread.map((m) => m.text);
  expect(
    texts.filter((t, i) => texts.indexOf(t) !== i),
    "messages posted twice",
  ).toEqual([]);
  const last = thread.at(-1)!;
  const code = CODE[failed];
  expect(last.text, "the outcome, its reason, its code and what to try").toMatch(
    new RegExp(
      // …and what the last check of the host saw (src/reporter/final-line.ts: "🔎 Checked at …")
      `^↩️ \\*Swap to .* rolled back\\*: .+ \\(${code}\\)\\. \\S+ is healthy again\\. 🔎 Checked at [0-9:]+ UTC: .+ active \\(MainPID \\d+\\).*\\. \\*Fix:\\* \\S`,
    ),
  );
  expect(texts.filter((t) => t.includes(`(${code})`))).toHaveLength(1);
  expect(texts.filter((t) => t.includes("*Fix:*"))).toHaveLength(1);
  expect(thread.filter((m) => m.reply_broadcast === true)).toEqual([last]);
  return card;
}
