import { randomBytes } from "node:crypto";

/**
 * A swap's id: `sw-`, the creation time in base 36 (milliseconds), `-`, six hex digits of randomness.
 * It names the swap in Slack, in Redis keys, in task directories on the host and in unit files.
 */
export const SWAP_ID = /^sw-[a-z0-9]{1,12}-[a-f0-9]{6}$/;

/** Shown where a swap id is asked for. */
export const SWAP_ID_EXAMPLE = "sw-mx2i7lz1-34a1fc";

export function newSwapId(now: number = Date.now()): string {
  return `sw-${now.toString(36)}-${randomBytes(3).toString("hex")}`;
}

export function isSwapId(text: string): boolean {
  return SWAP_ID.test(text);
}

/** When a swap was created, from its id (milliseconds); undefined for what is not a swap id. */
export function swapIdTime(id: string): number | undefined {
  if (!isSwapId(id)) return undefined;
  const ms = Number.parseInt(id.slice(3, id.lastIndexOf("-")), 36);
  return Number.isSafeInteger(ms) ? ms : undefined;
}
