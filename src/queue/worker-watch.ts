import type { RedisReachability } from "../redis/redis-reachability.ts";
import type { InFlight } from "./in-flight.ts";

/**
 * What the process follows of each of its BullMQ workers: their 'error' events, so Redis being away is
 * told once per change of state for all of them (redis-reachability.ts), and the jobs they run, so a stop
 * with none running does not wait for Redis (in-flight.ts).
 */
export interface WorkerWatch {
  reachability: Pick<RedisReachability, "error">;
  inFlight: Pick<InFlight, "track">;
}
