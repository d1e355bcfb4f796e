import { type BenchHostSpec, startBench } from "../testbench/bench.ts";
import { makeModel } from "../testbench/hub/index.ts";
import { SwapDriver } from "../testbench/swap-driver.ts";
import { spawnBot, stopBot } from "./bot-process.ts";
import type { Progress, SectionResult, Speed } from "./section.ts";
import { round } from "./stats.ts";

export interface SlackOptions {
  /** Swaps started at once, one per host. */
  swaps: number;
  speed: Speed;
}

export interface SlackFigures {
  swaps: number;
  calls_per_swap: number;
  rate_limited: number;
}

const MODEL = "sim-org/slack-budget-model";

/**
 * Slack call budget: N swaps on N hosts requested at the same moment and approved as soon as each plan
 * is posted, with the emulator enforcing Slack's documented rate limits (as shipped: no scaling). Every
 * Web API call the bot makes from the first request to the last Swapped counts, and every 429.
 */
export async function benchSlack(
  options: SlackOptions,
  progress: Progress,
): Promise<SectionResult<SlackFigures>> {
  const hosts: BenchHostSpec[] = Array.from({ length: options.swaps }, (_, i) => ({
    name: `gpu-${i + 1}`,
    gpus: "8x-rtx-pro-6000-blackwell",
    serving: { preset: "qwen3-fp8-dense" },
    faults: { sglang: options.speed.engine },
    waitHealthy: true,
  }));
  const bench = await startBench({ logTo: "silent", swaps: options.speed.swaps, hosts });
  const driver = new SwapDriver(bench);
  try {
    bench.hub.addModel(makeModel("llama-bf16-small", { id: MODEL, gated: false }));
    const bot = await spawnBot(bench);
    const before = bench.slack.calls().length;
    const started = Date.now();
    const cards = await Promise.all(hosts.map((h) => driver.request(MODEL, h.name)));
    await Promise.all(cards.map((card) => driver.approve(card.ts)));
    progress(`${options.swaps} swaps requested and approved`);
    await Promise.all(cards.map((card) => driver.outcome(card.ts, /Swapped/, 900_000)));
    const seconds = (Date.now() - started) / 1000;
    await stopBot(bot);
    const calls = bench.slack.calls().slice(before);
    const byMethod = new Map<string, number>();
    for (const call of calls) byMethod.set(call.method, (byMethod.get(call.method) ?? 0) + 1);
    const limited = calls.filter((c) => c.status === 429).length;
    return {
      figures: {
        swaps: options.swaps,
        calls_per_swap: round(calls.length / options.swaps, 1),
        rate_limited: limited,
      },
      details: [
        `slack: ${calls.length} calls for ${options.swaps} swaps in ${round(seconds, 0)} s: ${[...byMethod]
          .sort((a, b) => b[1] - a[1])
          .map(([m, n]) => `${m} ${n}`)
          .join(", ")}`,
      ],
    };
  } finally {
    await driver.close();
    await bench.stop();
  }
}
