import type { ChainableCommander } from "ioredis";
import { z } from "zod";
import { ENGINE_KINDS } from "../engine/engine-kind.ts";
import type { RedisClient } from "../queue/redis-client.ts";
import { swapRecordSchema } from "../swap/swap-record.ts";
import { keys } from "./keys.ts";
import { parseStored } from "./swap-records.ts";

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
  /** The engine it runs (absent: the host's `engine`, as before there was a choice). */
  engine: z.enum(ENGINE_KINDS).optional(),
  /** What served before it: what `/llm rollback` goes back to (kept here, so it outlives the swap's record). */
  previous: z
    .object({
      unit: z.string(),
      repo: z.string().optional(),
      port: z.number().int().optional(),
      engine: z.enum(ENGINE_KINDS).optional(),
    })
    .optional(),
});
export type ServingState = z.infer<typeof servingStateSchema>;

export const lastBenchmarkSchema = z.object({
  repo: z.string(),
  /** The engine it ran on (absent: SGLang). */
  engine: z.enum(ENGINE_KINDS).optional(),
  result: swapRecordSchema.shape.benchmark.unwrap(),
});
export type LastBenchmark = z.infer<typeof lastBenchmarkSchema>;

/** What each host serves and its last benchmark, as the swaps that changed them recorded. */
export class HostState {
  constructor(private readonly redis: RedisClient) {}

  async serving(host: string): Promise<ServingState | undefined> {
    const raw = await this.redis.get(keys.serving(host));
    return raw === null ? undefined : parseStored(servingStateSchema, raw, "serving state of", host);
  }

  async lastBenchmark(host: string): Promise<LastBenchmark | undefined> {
    const raw = await this.redis.get(keys.benchmark(host));
    return raw === null ? undefined : parseStored(lastBenchmarkSchema, raw, "last benchmark of", host);
  }

  /** Both written in the MULTI that records the swap that changed them. */
  setServingInTransaction(tx: ChainableCommander, host: string, state: ServingState): void {
    tx.set(keys.serving(host), JSON.stringify(servingStateSchema.parse(state)));
  }

  setLastBenchmarkInTransaction(tx: ChainableCommander, host: string, benchmark: LastBenchmark): void {
    tx.set(keys.benchmark(host), JSON.stringify(lastBenchmarkSchema.parse(benchmark)));
  }
}
