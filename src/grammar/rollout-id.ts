import { randomBytes } from "node:crypto";

/**
 * A rollout's id: `ro-`, the creation time in base 36 (milliseconds), `-`, six hex digits of randomness,
 * the shape of a swap id (src/grammar/swap-id.ts) under its own prefix: one swap of many hosts.
 */
export const ROLLOUT_ID = /^ro-[a-z0-9]{1,12}-[a-f0-9]{6}$/;

/** Shown where a rollout id is asked for. */
export const ROLLOUT_ID_EXAMPLE = "ro-mx2i7lz1-9b03ee";

export function newRolloutId(now: number = Date.now()): string {
  return `ro-${now.toString(36)}-${randomBytes(3).toString("hex")}`;
}

export function isRolloutId(text: string): boolean {
  return ROLLOUT_ID.test(text);
}
