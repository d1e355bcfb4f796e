import { escapeMrkdwn } from "../escape-mrkdwn.ts";
import type { FrontDoorServer } from "../front-door/front-door.ts";

/** What a unit's slot does in each state; the hold slot's own words say what holding means. */
const STATE_WORD = { ready: "takes requests", drain: "drains", maint: "stopped (no requests)" } as const;
const HOLD_WORD = {
  ready: "holds new requests",
  drain: "holds new requests",
  maint: "idle (holds requests only during a swap)",
} as const;

/**
 * `/llm status`'s line for a host's front door: each slot's state and requests in flight, e.g.
 * "🚪 Front door (HAProxy backend sglang): `blue` takes requests (3 in flight) · `hold` idle (holds
 * requests only during a swap)", or why it could not be read. `hold` names the slot that holds requests.
 */
export function frontDoorLine(
  backend: string,
  read: { servers: readonly FrontDoorServer[] } | { error: string; code: string },
  hold?: string,
): string {
  const head = `🚪 *Front door* (HAProxy backend \`${escapeMrkdwn(backend)}\`)`;
  if ("error" in read)
    return `${head}: could not be read: ${escapeMrkdwn(read.error)} (${escapeMrkdwn(read.code)})`;
  const slots = read.servers.map((s) => {
    const inFlight = s.sessions > 0 || s.state !== "maint" ? ` (${s.sessions} in flight)` : "";
    const word = s.name === hold ? HOLD_WORD[s.state] : STATE_WORD[s.state];
    return `\`${escapeMrkdwn(s.name)}\` ${word}${inFlight}`;
  });
  const none = read.servers.every((s) => s.state !== "ready" || s.name === hold)
    ? " — ⚠️ no unit's slot takes new requests"
    : "";
  return `${head}: ${slots.join(" · ")}${none}`;
}
