import { describe, expect, it } from "vitest";
import { RunningSwap } from "../../jobs/swap/swap-state.ts";
import type { SwapRecord } from "../../src/swap/swap-record.ts";
import { LIFECYCLE_FIELDS } from "../../src/swap/swap-transitions.ts";
import { aRecord } from "../support/records.ts";
import { FakeClock } from "./stages/fake-stage-context.ts";

/**
 * The record's lifecycle moves only by named transitions (src/swap/swap-transitions.ts), each checking the
 * state it leaves from: a step that tries to record what cannot have happened (a flip of a unit not
 * started beside, a retirement with no flip, a second end) stops the swap instead of writing a record that
 * is not what the host is; a step resumed after a crash repeats a transition without changing its time.
 */
function running(over: Partial<SwapRecord> = {}): { swap: RunningSwap; clock: FakeClock } {
  const clock = new FakeClock();
  return { swap: new RunningSwap(aRecord({ step: "switch", ...over }), clock, async () => undefined), clock };
}

describe("the swap record's transitions", () => {
  it("keep the first time when a resumed step repeats them", () => {
    const { swap, clock } = running();
    swap.to.switchBegun(4242, false);
    const began = swap.record.switch!.startedAt;
    clock.time += 5000;
    swap.to.switchBegun(1, true);
    expect(swap.record.switch).toEqual({ startedAt: began, oldMainPid: 4242 });
    swap.to.oldStopped();
    const stopped = swap.record.switch!.oldStoppedAt;
    clock.time += 5000;
    swap.to.oldStopped();
    swap.to.newStarted();
    const started = swap.record.switch!.newStartedAt;
    clock.time += 5000;
    swap.to.newStarted();
    expect(swap.record.switch).toMatchObject({ oldStoppedAt: stopped, newStartedAt: started, done: true });
    expect(started).not.toBe(stopped);
  });

  it("refuse what cannot follow the record's state, naming the transition and the state", () => {
    const { swap } = running();
    expect(() => swap.to.oldStopped()).toThrow(
      /"oldStopped" cannot follow a swap whose switch has not begun/,
    );
    swap.to.switchBegun(4242, false);
    expect(() => swap.to.flipped("blue", "green")).toThrow(
      /"flipped" cannot follow a unit not started beside/,
    );
    expect(() => swap.to.retired()).toThrow(/"retired" cannot follow no flip/);
    expect(() => swap.to.released()).toThrow(/"released" cannot follow a front door that holds nothing/);
    expect(() => swap.to.restartHeld()).toThrow(/cannot follow an old unit not yet retired/);
    try {
      swap.to.parkedWoken();
      expect.unreachable();
    } catch (error) {
      expect(error).toMatchObject({
        code: "INTERNAL",
        fix: expect.stringMatching(/this is a bug in modelswap/),
      });
    }
  });

  it("take a blue/green swap through its flip, its window and its retirement, and no flip back after it", () => {
    const { swap } = running();
    swap.to.switchBegun(4242, true);
    expect(() => swap.to.oldStopBegan()).toThrow(/a blue\/green switch/);
    swap.to.flipped("blue", "green");
    expect(swap.record).toMatchObject({ flip: { from: "blue", to: "green" }, downtimeSeconds: 0 });
    swap.to.windowDrained(0);
    expect(() => swap.to.retired()).toThrow(/an old unit whose retirement never began/);
    swap.to.retiring();
    expect(() => swap.to.flippedBack()).toThrow(/an old unit already stopping/);
    swap.to.retired();
    swap.to.restartHeld();
    expect(swap.record.restart?.heldAt).toBeDefined();
  });

  it("end a swap once", () => {
    const { swap } = running();
    swap.to.finished("failed");
    expect(swap.record).toMatchObject({ outcome: "failed", step: "done" });
    expect(() => swap.to.finished("succeeded")).toThrow(/"finished" cannot follow the swap's end \(failed\)/);
    expect(() => swap.to.stepTo("health")).toThrow(/"stepTo" cannot follow the swap's end/);
  });

  it("are the only way to the lifecycle's fields: `set` takes the record's data only", () => {
    const { swap } = running();
    // refused by the type checker, and by the record itself for code that gets past it
    // @ts-expect-error: the lifecycle is not data
    expect(() => swap.set({ flip: { from: "a", to: "b", flippedAt: "2026-12-01T00:00:00.000Z" } })).toThrow(
      /flip changed outside the record's transitions/,
    );
    // @ts-expect-error: nor is the step
    expect(() => swap.set({ step: "finish", reason: "x" })).toThrow(/step changed outside/);
    expect(swap.record.flip).toBeUndefined();
    expect(swap.record.step).toBe("switch");
    swap.set({ reason: "data, not lifecycle" });
    expect(swap.record.reason).toBe("data, not lifecycle");
    expect(LIFECYCLE_FIELDS).toEqual(
      expect.arrayContaining(["switch", "flip", "outcome", "step", "finalCheck"]),
    );
  });
});
