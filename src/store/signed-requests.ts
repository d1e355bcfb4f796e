import { CodedError } from "../errors.ts";
import type { RedisClient } from "../redis/redis-client.ts";
import { keys } from "./keys.ts";

/**
 * The signed HTTP requests from Slack already accepted, by `v0:<timestamp>:<signature>`, in Redis (shared
 * by every bot process), each kept until its signature could no longer pass the timestamp check. A
 * request is accepted once: a second delivery of the same bytes is a replay (Slack signs each delivery
 * anew, its retries included, so it never sends one signature twice).
 */
export class SignedRequests {
  constructor(private readonly redis: RedisClient) {}

  /**
   * True the first time this signature is seen; false for every later delivery of it. Throws
   * QUEUE_UNAVAILABLE when Redis cannot say (the request must then not be handled).
   */
  async firstUse(timestamp: number, signature: string, keepSeconds: number): Promise<boolean> {
    const ttl = Math.max(1, Math.ceil(keepSeconds));
    try {
      return (await this.redis.set(keys.signedRequest(timestamp, signature), "1", "EX", ttl, "NX")) === "OK";
    } catch (error) {
      throw new CodedError(
        "QUEUE_UNAVAILABLE",
        `the job queue is unavailable (RedisClient could not record the request: ${(error as Error).message})`,
        "Redis is down or unreachable: check REDIS_URL (or REDIS_SENTINELS, REDIS_CLUSTER_NODES) and the redis-server; nothing was done, try again once it is back",
        { cause: error },
      );
    }
  }
}
