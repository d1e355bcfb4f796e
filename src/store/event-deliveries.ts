import type { RedisClient } from "../redis/redis-client.ts";
import { keys } from "./keys.ts";

/** How long a claimed delivery may take before a retry may handle it after all (a crash mid-handling). */
const HANDLING_TTL_SECONDS = 60;
/** Slack retries for about 6 minutes (at once, after 1 min, after 5 min); an hour is a wide margin. */
const HANDLED_TTL_SECONDS = 3600;

const key = keys.delivery;

/**
 * The Events API deliveries already taken, by `event_id`, in Redis (shared by every bot process). Slack
 * sends an event again — same `event_id`, `X-Slack-Retry-Num` 1..3 — whenever it did not see the ack in
 * time, also when the first delivery did arrive and is being, or was, handled.
 */
export class EventDeliveries {
  constructor(private readonly redis: RedisClient) {}

  /** True for the first delivery of this event; false while another is handled or once one was. */
  async claim(eventId: string): Promise<boolean> {
    return (await this.redis.set(key(eventId), "handling", "EX", HANDLING_TTL_SECONDS, "NX")) === "OK";
  }

  async handled(eventId: string): Promise<void> {
    await this.redis.set(key(eventId), "handled", "EX", HANDLED_TTL_SECONDS);
  }

  /** Handling failed: a retry may try again. */
  async release(eventId: string): Promise<void> {
    await this.redis.del(key(eventId));
  }
}
