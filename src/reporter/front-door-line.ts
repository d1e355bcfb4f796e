import type { FrontDoorServer } from "../front-door/front-door.ts";
import { escapeMrkdwn } from "./message.ts";

const STATE_WORD = { ready: "takes requests", drain: "drains", maint: "out" } as const;

/**
 * `/llm status`'s line for a host's front door: each slot's state and requests in flight, e.g.
 * "🚪 Front door (HAProxy backend sglang): `blue` takes requests (3 in flight) · `hold` out", or why it
 * could not be read.
 */
export function frontDoorLine(
  backend: string,
  read: { servers: readonly FrontDoorServer[] } | { error: string; code: string },
): string {
  const head = `🚪 *Front door* (HAProxy backend \`${escapeMrkdwn(backend)}\`)`;
  if ("error" in read)
    return `${head}: could not be read: ${escapeMrkdwn(read.error)} (${escapeMrkdwn(read.code)})`;
  const slots = read.servers.map((s) => {
    const inFlight = s.sessions > 0 || s.state !== "maint" ? ` (${s.sessions} in flight)` : "";
    return `\`${escapeMrkdwn(s.name)}\` ${STATE_WORD[s.state]}${inFlight}`;
  });
  const none = read.servers.every((s) => s.state !== "ready") ? " — ⚠️ no slot takes new requests" : "";
  return `${head}: ${slots.join(" · ")}${none}`;
}
