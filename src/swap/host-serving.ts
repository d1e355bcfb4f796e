import { z } from "zod";
import { ENGINE_KINDS } from "../engine/engine-kind.ts";
import { swapRecordSchema } from "./swap-record.ts";

/*
 * What a host serves and its last benchmark, as the swaps that changed them left them: the swap's own
 * facts about its host, kept by the store (src/store/host-state.ts) beyond the swap's record.
 */

/** What a host serves now, as modelswap last left it (the config's currentUnit until the first swap). */
export const servingStateSchema = z.object({
  unit: z.string(),
  repo: z.string().optional(),
  sha: z.string().optional(),
  modelDir: z.string().optional(),
  since: z.string(),
  /** The swap that put it there. */
  swapId: z.string().optional(),
  /** The port it listens on, when not the host's servingPort (a blue/green swap put it behind the standby slot). */
  port: z.number().int().optional(),
  /** The engine it runs (records from before there was a choice: the host's `engine`, store migration v3). */
  engine: z.enum(ENGINE_KINDS),
  /** What served before it: what `/llm rollback` goes back to (kept here, so it outlives the swap's record). */
  previous: z
    .object({
      unit: z.string(),
      repo: z.string().optional(),
      /** Its commit: `/llm rollback` of an in-place swap (the same unit) loads this one back. */
      sha: z.string().optional(),
      port: z.number().int().optional(),
      engine: z.enum(ENGINE_KINDS),
    })
    .optional(),
});
export type ServingState = z.infer<typeof servingStateSchema>;

export const lastBenchmarkSchema = z.object({
  repo: z.string(),
  /** The engine it ran on (records from before there was a choice: SGLang, store migration v3). */
  engine: z.enum(ENGINE_KINDS),
  result: swapRecordSchema.shape.benchmark.unwrap(),
});
export type LastBenchmark = z.infer<typeof lastBenchmarkSchema>;
