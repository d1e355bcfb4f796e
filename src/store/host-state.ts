import type { RedisClient } from "../redis/redis-client.ts";
import {
  type LastBenchmark,
  lastBenchmarkSchema,
  type ServingState,
  servingStateSchema,
} from "../swap/host-serving.ts";
import { keys } from "./keys.ts";
import type { SaveWrites } from "./save-writes.ts";
import { parseStored } from "./swap-records.ts";

export { type LastBenchmark, lastBenchmarkSchema, type ServingState, servingStateSchema };

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

  /** Both written with the save that records the swap that changed them (src/store/save-writes.ts). */
  setServingInTransaction(tx: SaveWrites, host: string, state: ServingState): void {
    tx.set(keys.serving(host), JSON.stringify(servingStateSchema.parse(state)));
  }

  setLastBenchmarkInTransaction(tx: SaveWrites, host: string, benchmark: LastBenchmark): void {
    tx.set(keys.benchmark(host), JSON.stringify(lastBenchmarkSchema.parse(benchmark)));
  }
}
