import type { SwapRecord } from "./swap-record.ts";

/**
 * Whether a cancel can no longer flip a blue/green swap back: its old unit's stop has begun (the new unit
 * serves, and the swap ends as it is).
 */
export function pastFlipBack(record: Readonly<SwapRecord>): boolean {
  return record.flip?.retiringAt !== undefined;
}

/**
 * Whether a blue/green swap is in its flip-back window: flipped to the new unit, the old one still loaded
 * and not yet stopping, nothing ended. A cancel (or `/llm rollback` of its host) then flips back at once.
 */
export function inFlipBackWindow(record: Readonly<SwapRecord>): boolean {
  const flip = record.flip;
  return (
    record.outcome === undefined &&
    flip !== undefined &&
    flip.flippedBackAt === undefined &&
    !pastFlipBack(record) &&
    record.step !== "rollback"
  );
}
