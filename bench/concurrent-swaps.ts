import { type BenchHostSpec, startBench } from "../testbench/bench.ts";
import { freePort } from "../testbench/free-port.ts";
import { makeModel } from "../testbench/hub/index.ts";
import { SwapDriver } from "../testbench/swap-driver.ts";
import { spawnBot, stopBot } from "./bot-process.ts";
import type { Progress, SectionResult, Speed } from "./section.ts";
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
  const hosts: BenchHostSpec[] = Array.from({ length: options.swaps }, (_, i) => ({
    name: `gpu-${i + 1}`,
    gpus: "8x-rtx-pro-6000-blackwell",
    serving: { preset: "qwen3-fp8-dense" },
    faults: { sglang: options.speed.engine },
    waitHealthy: true,
  }));
  const bench = await startBench({ logTo: "silent", swaps: options.speed.swaps, hosts });
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
    const seen = await Promise.all(
      cards.map(async (card) => {
        await driver.outcome(card.ts, /Swapped/, 900_000);
        return { card, at: Date.now() };
      }),
    );
    const lastOutcome = Math.max(...seen.map((s) => s.at)) - started;
    const lags = await Promise.all(
      seen.map(async ({ card, at }) => {
        const record = await driver.record(driver.swapId(card.ts));
        const finished = Date.parse(record?.finishedAt ?? "");
        return Number.isFinite(finished) ? Math.max(0, at - finished) : Number.NaN;
      }),
    );
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
        `concurrent: ${calls.length} Slack calls for ${options.swaps} swaps in ${round(lastOutcome / 1000, 0)} s: ${[
          ...byMethod,
        ]
          .sort((a, b) => b[1] - a[1])
          .map(([m, n]) => `${m} ${n}`)
          .join(", ")}`,
        `concurrent: 429 answers by method: ${limited === 0 ? "none" : [...limitedBy].map(([m, n]) => `${m} ${n}`).join(", ")}`,
        `concurrent: an outcome reached its card ${round(Math.min(...lags) / 1000, 1)}–${round(Math.max(...lags) / 1000, 1)} s after its swap ended (median ${round(percentile(lags, 50) / 1000, 1)} s)`,
      ],
    };
  } finally {
    await driver.close();
    await bench.stop();
  }
}
