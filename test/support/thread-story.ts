import type { Bench } from "../../testbench/bench.ts";
import { CHANNEL } from "../../testbench/bench.ts";
import type { SlackMessage } from "../../testbench/slack/index.ts";
import type { SwapDriver } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";

/**
 * The milestones a succeeded swap's thread tells, in order, each once: its plan, the download, the
 * engine build, the switch, the benchmark, and the outcome (DESIGN.md §4; the reporter's thread-messages).
 */
export const SUCCEEDED_STORY: readonly [string, RegExp][] = [
  ["the plan", /^Swap plan:/],
  ["the download", /^📦 Download complete/],
  ["the engine build", /^🔧 Engine built/],
  ["the switch", /^🔀 Switched/],
  ["the benchmark table", /output tok\/s at /],
  ["the outcome", /now serves/],
];

/** The stage whose failure rolls a swap back: the new unit never became healthy, or it answered nonsense. */
export type FailedStage = "health" | "sanity";

/**
 * The milestones a rolled-back swap's thread tells, in order, each once: its plan, the download, the
 * engine build, the switch, the failure of `failed` (with its log), the rollback beginning, and the
 * outcome (rolled back, with the reason, its code and what to try).
 */
export function rolledBackStory(failed: FailedStage): readonly [string, RegExp][] {
  return [
    ...SUCCEEDED_STORY.slice(0, 4),
    failed === "health"
      ? ["the health failure", /^❌ `[^`]+` did not become healthy:/]
      : ["the sanity failure", /^❌ Sanity check failed:/],
    ["the rollback", /^↩️ Rolling back to /],
    ["the outcome", /^↩️ \*Swap to .* rolled back\*:/],
  ];
}

/** Milestones that happen side by side, so either may be told first (the download and the build run in parallel). */
const SIDE_BY_SIDE = [["the download", "the engine build"]] as const;

/**
 * The thread's messages that are milestones of the story, as the story's names, in thread order (but for
 * milestones of work that ran side by side, which are put in the story's order). A message that folds
 * several progress lines tells each of them.
 */
export function storyOf(thread: readonly SlackMessage[], story = SUCCEEDED_STORY): string[] {
  // a busy channel folds progress lines into one message (src/reporter/report-pace.ts): each line is
  // read as a milestone of its own, in order; a milestone told twice in one message counts once
  const told = thread.flatMap((m) => [
    ...new Set(
      m.text
        .split("\n")
        .flatMap((line) => story.filter(([, pattern]) => pattern.test(line)).map(([name]) => name)),
    ),
  ]);
  for (const [first, second] of SIDE_BY_SIDE) {
    const a = told.indexOf(first);
    const b = told.indexOf(second);
    if (a >= 0 && b === a - 1) [told[b], told[a]] = [first, second];
  }
  return told;
}

/**
 * Waits until the swap's one live card reads `pattern` and its thread tells the whole story; then
 * returns the card. Throws (naming what is missing) when Slack's thread is incomplete, out of order or
 * repeats a milestone by the deadline.
 */
export async function untilThreadComplete(
  bench: Bench,
  swaps: SwapDriver,
  swapId: string,
  { card: pattern = /Swapped/, timeoutMs = 60_000, story = SUCCEEDED_STORY } = {},
): Promise<SlackMessage> {
  let last = "";
  const wanted = story.map(([name]) => name);
  try {
    return await until(
      () => {
        const cards = swaps.cardsOf(swapId);
        if (cards.length !== 1) {
          last = `${cards.length} cards`;
          return undefined;
        }
        const card = cards[0]!;
        const told = storyOf(bench.slack.thread(CHANNEL, card.ts), story);
        last = `card "${card.text}", thread ${JSON.stringify(told)}`;
        return pattern.test(card.text) && JSON.stringify(told) === JSON.stringify(wanted) ? card : undefined;
      },
      { what: `the whole story of swap ${swapId} in one card's thread`, timeoutMs },
    );
  } catch (error) {
    throw new Error(`${(error as Error).message}; last seen: ${last}; wanted ${JSON.stringify(wanted)}`);
  }
}
