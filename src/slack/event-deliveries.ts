import type { AnyMiddlewareArgs, Middleware } from "@slack/bolt";
import { EVENT_ID } from "../grammar/slack-ids.ts";
import type { Logger } from "../log.ts";
import type { EventDeliveries } from "../store/event-deliveries.ts";

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

/**
 * The event id of an Events API delivery (`type: "event_callback"`) that this dedupe can key, else
 * undefined. The replay guard asks the same question of a request's body: a retry number counts there only
 * for a delivery this middleware will see by its id.
 */
export function eventIdOf(body: unknown): string | undefined {
  if (typeof body !== "object" || body === null) return undefined;
  const { type, event_id: eventId } = body as { type?: unknown; event_id?: unknown };
  // Slack's event ids are short words (Ev08MFMKH6); anything else is not used as a key
  return type === "event_callback" && typeof eventId === "string" && EVENT_ID.test(eventId)
    ? eventId
    : undefined;
}
