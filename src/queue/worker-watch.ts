import type { RedisReachability } from "./redis-reachability.ts";

/**
 * What the process follows of each of its BullMQ workers: their 'error' events, so Redis being away is
 * told once per change of state for all of them (redis-reachability.ts).
 */
export interface WorkerWatch {
  reachability: Pick<RedisReachability, "error">;
}
