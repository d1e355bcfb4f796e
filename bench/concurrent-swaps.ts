import { CHANNEL, startBench } from "../testbench/bench.ts";
import { freePort } from "../testbench/free-port.ts";
import { makeModel } from "../testbench/hub/index.ts";
import type { SlackMessage } from "../testbench/slack/types.ts";
import { SwapDriver } from "../testbench/swap-driver.ts";
import { spawnBot, stopBot } from "./bot-process.ts";
import { benchSpeed, type Progress, type SectionResult, type Speed, servingHost } from "./section.ts";
import { countBy, percentile, round, sum } from "./stats.ts";

export interface ConcurrentOptions {
  /** Swaps started at once, one per host, all in one channel. */
  swaps: number;
  speed: Speed;
}

export interface ConcurrentFigures {
  swaps: number;
  /** 429 answers Slack gave the bot, over every call of every swap. */
  rate_limited: number;
  /** Seconds any swap's stage spent waiting on a Slack call (the bot's own sensor, summed). */
  stage_wait_on_slack_s: number;
  /** From the requests to the last swap's outcome on its card, seconds. */
  last_outcome_s: number;
  /** The longest a swap's outcome took to reach its card after the swap ended, seconds. */
  outcome_lag_s: number;
  calls_per_swap: number;
}

const MODEL = "sim-org/concurrent-model";

/**
 * N swaps on N hosts in one channel, requested at the same moment and approved as soon as each plan is
 * posted, with the Slack emulator enforcing Slack's documented limits as shipped (chat.postMessage about
 * one a second per channel, chat.update Tier 3). Counted: every Web API call and every 429; the seconds
 * the bot's stages spent inside Slack calls (its `modelswap_slack_wait_in_stages_seconds_total`, scraped
 * from its /metrics); when each card said Swapped against when its swap ended (the record's
 * finishedAt), and when the last one did.
 */
export async function benchConcurrent(
  options: ConcurrentOptions,
  progress: Progress,
): Promise<SectionResult<ConcurrentFigures>> {
  const hosts = Array.from({ length: options.swaps }, (_, i) => servingHost(`gpu-${i + 1}`, options.speed));
  const bench = await startBench({
    ...benchSpeed(options.speed),
    logTo: "silent",
    swaps: options.speed.swaps,
    hosts,
  });
  // each card and plan waits its turn behind the others' (about one post a second in one channel)
  const driver = new SwapDriver(bench, { postWithinMs: 10_000 * options.swaps });
  try {
    bench.hub.addModel(makeModel("llama-bf16-small", { id: MODEL, gated: false }));
    const metricsPort = await freePort();
    bench.env.METRICS_PORT = String(metricsPort);
    const bot = await spawnBot(bench);
    const before = bench.slack.calls().length;
    const started = Date.now();
    const cards = await Promise.all(hosts.map((h) => driver.request(MODEL, h.name)));
    await Promise.all(cards.map((card) => driver.approve(card.ts)));
    progress(`${options.swaps} swaps requested and approved in ${round((Date.now() - started) / 1000, 0)} s`);
    // When each card first said it: read from the card's edits in Slack (the emulator keeps each version
    // with the moment it was replaced), not from when this loop saw it: a swap approved early may have
    // ended, and its card said so, before the last approval above was through.
    const seen = await Promise.all(
      cards.map(async (card) => {
        await driver.outcome(card.ts, /Swapped/, 900_000);
        return { card, at: firstSaid(bench.slack.message(CHANNEL, card.ts), /Swapped/) };
      }),
    );
    const lastOutcome = Math.max(...seen.map((s) => s.at)) - started;
    // the threads catch up after the cards: every call is counted once the last thread is complete (its
    // final line out, the bot's ✅/❌ taken back) and Slack has heard nothing more for 3 s
    await Promise.all(cards.map((card) => driver.finalLine(card.ts, 900_000)));
    const threadsDone = Date.now() - started;
    for (let calls = -1; calls !== bench.slack.calls().length; ) {
      calls = bench.slack.calls().length;
      await new Promise((resolve) => setTimeout(resolve, 3000));
    }
    const lagOf = await Promise.all(
      seen.map(async ({ card, at }) => {
        const record = await driver.record(driver.swapId(card.ts));
        const finished = Date.parse(record?.finishedAt ?? "");
        return {
          swap: driver.swapId(card.ts),
          lag: Number.isFinite(finished) ? Math.max(0, at - finished) : Number.NaN,
        };
      }),
    );
    const lags = lagOf.map((l) => l.lag);
    const worst = [...lagOf].sort((a, b) => b.lag - a.lag).slice(0, 3);
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    await stopBot(bot);
    const stageWait = sum(
      metrics
        .split("\n")
        .filter((line) => line.startsWith("modelswap_slack_wait_in_stages_seconds_total{"))
        .map((line) => Number(line.split(" ").at(-1))),
    );
    const calls = bench.slack.calls().slice(before);
    const byMethod = countBy(calls, (c) => c.method);
    const limitedBy = countBy(
      calls.filter((c) => c.status === 429),
      (c) => c.method,
    );
    const limited = sum([...limitedBy.values()]);
    if (lags.some((lag) => Number.isNaN(lag))) throw new Error("bench: a swap's record has no finishedAt");
    return {
      figures: {
        swaps: options.swaps,
        rate_limited: limited,
        stage_wait_on_slack_s: round(stageWait, 3),
        last_outcome_s: round(lastOutcome / 1000, 1),
        outcome_lag_s: round(Math.max(...lags) / 1000, 1),
        calls_per_swap: round(calls.length / options.swaps, 1),
      },
      details: [
        `concurrent: every thread complete ${round(threadsDone / 1000, 0)} s after the requests`,
        `concurrent: ${calls.length} Slack calls for ${options.swaps} swaps: ${[...byMethod]
          .sort((a, b) => b[1] - a[1])
          .map(([m, n]) => `${m} ${n}`)
          .join(", ")}`,
        `concurrent: 429 answers by method: ${limited === 0 ? "none" : [...limitedBy].map(([m, n]) => `${m} ${n}`).join(", ")}`,
        `concurrent: an outcome reached its card ${round(Math.min(...lags) / 1000, 1)}–${round(Math.max(...lags) / 1000, 1)} s after its swap ended (median ${round(percentile(lags, 50) / 1000, 1)} s; the latest: ${worst.map((w) => `${w.swap} ${round(w.lag / 1000, 1)} s`).join(", ")})`,
      ],
    };
  } finally {
    await driver.close();
    await bench.stop();
  }
}

/** The moment a message first read as `pattern`: the edit that made it so (or its post), from its history. */
function firstSaid(message: SlackMessage | undefined, pattern: RegExp): number {
  if (message === undefined) throw new Error("bench: a card is gone");
  const versions = [...message.history.map((h) => h.text), message.text];
  if (pattern.test(versions[0]!)) return message.postedAt;
  // version i + 1 replaced version i at history[i].at
  const i = versions.findIndex((text, n) => n > 0 && pattern.test(text));
  if (i < 1) throw new Error(`bench: the card never read as ${pattern}`);
  return message.history[i - 1]!.at;
}
