import { describe, expect, it } from "vitest";
import { clientImpact, impactText } from "../../src/swap/client-impact.ts";
import { aRecord } from "../support/records.ts";

/** What the card, the final line and /llm history say clients saw of a cold swap behind a front door. */
const T = (s: number) => new Date(Date.UTC(2026, 11, 7, 6, 0, s)).toISOString();

function coldSwap(parked?: { at: string; failed?: string }) {
  const record = aRecord({
    switch: {
      startedAt: T(0),
      stopBeganAt: T(1),
      oldStoppedAt: T(2),
      newStartedAt: T(2),
      done: true,
      ...(parked === undefined ? {} : { parked }),
    },
    frontDoor: { heldAt: T(0), drainedAt: T(1), releasedAt: T(6) },
    healthyAt: T(5),
  });
  return impactText(clientImpact(record)!);
}

describe("the clients' line of a cold swap", () => {
  it("names the old unit's stop", () => {
    expect(coldSwap()).toBe("requests held 6 s (drain 1 s · stop 1 s · load 3 s)");
  });

  it("names its park when the switch parked it, and its stop when the park failed and it was stopped", () => {
    expect(coldSwap({ at: T(2) })).toBe("requests held 6 s (drain 1 s · park 1 s · load 3 s)");
    expect(coldSwap({ at: T(2), failed: "it did not sleep" })).toBe(
      "requests held 6 s (drain 1 s · stop 1 s · load 3 s)",
    );
  });
});

describe("the clients' line of an in-place swap", () => {
  const inPlace = (frontDoor: boolean) =>
    aRecord({
      switch: {
        startedAt: T(0),
        stopBeganAt: T(1),
        oldStoppedAt: T(1),
        newStartedAt: T(3),
        inPlace: { beganAt: T(1), at: T(3), seconds: 1.8 },
        done: true,
      },
      ...(frontDoor ? { frontDoor: { heldAt: T(0), drainedAt: T(1), releasedAt: T(5) } } : {}),
      healthyAt: T(4),
      downtimeSeconds: 3,
    });

  it("names the engine's load, never a stop or a start, behind a front door", () => {
    expect(impactText(clientImpact(inPlace(true))!)).toBe(
      "requests held 5 s (drain 1 s · load in place 1.8 s)",
    );
  });

  it("says requests were held (by the engine's writer lock), not refused, without one", () => {
    expect(clientImpact(inPlace(false))).toMatchObject({ mode: "held", gapSeconds: 3 });
  });
});
