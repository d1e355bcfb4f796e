import type { AnyMiddlewareArgs, Middleware } from "@slack/bolt";
import type { Redis } from "ioredis";
import { EVENT_ID } from "../grammar/slack-ids.ts";
import type { Logger } from "../log.ts";
import { QUEUE_PREFIX } from "../queue/redis-connection.ts";

/** How long a claimed delivery may take before a retry may handle it after all (a crash mid-handling). */
const HANDLING_TTL_SECONDS = 60;
/** Slack retries for about 6 minutes (at once, after 1 min, after 5 min); an hour is a wide margin. */
const HANDLED_TTL_SECONDS = 3600;

const key = (eventId: string) => `${QUEUE_PREFIX}:event:${eventId}`;

/**
 * The Events API deliveries already taken, by `event_id`, in Redis (shared by every bot process). Slack
 * sends an event again — same `event_id`, `X-Slack-Retry-Num` 1..3 — whenever it did not see the ack in
 * time, also when the first delivery did arrive and is being, or was, handled.
 */
export class EventDeliveries {
  constructor(private readonly redis: Redis) {}

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

/**
 * Global Bolt middleware: each Events API event runs its listeners once, however often Slack delivers it.
 * Decisions are first-wins in the store anyway; this keeps a retried event from doing anything else twice
 * (telling a non-approver twice that they cannot approve, a second "already approved by…"). A claim whose
 * handling crashed expires, so a later retry of that event is handled after all. Commands and button
 * clicks carry no event id and are never retried by Slack: they pass through.
 */
export function handleEachEventOnce(deliveries: EventDeliveries, log: Logger): Middleware<AnyMiddlewareArgs> {
  return async ({ body, next }) => {
    const eventId = eventIdOf(body);
    if (eventId === undefined) {
      await next();
      return;
    }
    if (!(await deliveries.claim(eventId))) {
      log.info({ eventId }, "event already delivered: this retry is ignored");
      return;
    }
    try {
      await next();
    } catch (error) {
      await deliveries.release(eventId).catch(() => undefined);
      throw error;
    }
    await deliveries.handled(eventId);
  };
}

function eventIdOf(body: unknown): string | undefined {
  if (typeof body !== "object" || body === null) return undefined;
  const { type, event_id: eventId } = body as { type?: unknown; event_id?: unknown };
  // Slack's event ids are short words (Ev08MFMKH6); anything else is not used as a key
  return type === "event_callback" && typeof eventId === "string" && EVENT_ID.test(eventId)
    ? eventId
    : undefined;
}
