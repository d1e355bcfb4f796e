import type { BenchHostSpec } from "../testbench/bench.ts";

/** What every bench section shares: how it reports progress, what it gives back, how fast the world turns. */

/** A line of progress, printed as a section runs. */
export type Progress = (line: string) => void;

/** What a section gives back: its figures (the JSON) and lines that explain them (the table's notes). */
export interface SectionResult<F> {
  figures: F;
  details: string[];
}

/**
 * How fast the bench's world turns: the config's `swaps:` section and the simulated engine's timings.
 * The full run measures the bot as shipped; the quick run only has to finish soon.
 */
export interface Speed {
  swaps: Record<string, number | string | boolean | string[]>;
  /** The simulated SGLang's `sglang` fault (loadSeconds, warmupMs, msPerToken, ttftMs); {} for its defaults. */
  engine: Record<string, number>;
  /**
   * bench.slackRateScale on both sides (the emulator's limits and the bot's pace): the quick run's, whose
   * figures mean nothing; the full run measures the bot at Slack's own limits.
   */
  slackRateScale?: number;
}

/** The startBench option of a section's speed that is neither per host nor in `swaps`: Slack's pace. */
export function benchSpeed(speed: Speed): { slackRateScale?: number } {
  return speed.slackRateScale === undefined ? {} : { slackRateScale: speed.slackRateScale };
}

/**
 * The host every swap section swaps on: eight RTX PRO 6000 Blackwell serving the dense Qwen3 FP8 preset,
 * its simulated engine at the section's speed, healthy before the section starts. `more` adds to it
 * (a front door, vLLM).
 */
export function servingHost(name: string, speed: Speed, more: Partial<BenchHostSpec> = {}): BenchHostSpec {
  return {
    name,
    gpus: "8x-rtx-pro-6000-blackwell",
    serving: { preset: "qwen3-fp8-dense" },
    faults: { sglang: speed.engine },
    waitHealthy: true,
    ...more,
  };
}
