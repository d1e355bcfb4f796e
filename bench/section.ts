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
  swaps: Record<string, number | string | boolean>;
  /** The simulated SGLang's `sglang` fault (loadSeconds, warmupMs, msPerToken, ttftMs); {} for its defaults. */
  engine: Record<string, number>;
}
