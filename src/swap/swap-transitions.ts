import { CodedError } from "../errors.ts";
import type { SwapOutcome, SwapRecord, SwapStep } from "./swap-record.ts";

/*
 * The swap record's lifecycle, as named transitions: how far the switch got, the front door's hold, a
 * blue/green flip and its window, a restart at full memory, a rollback, a cancel, the final check and the
 * end. Each checks the state it leaves from: one that cannot follow the record's state (a flip without a
 * unit started beside, a retirement with no flip, an end after the end) throws INTERNAL instead of writing
 * a record that lies about the host. Each is idempotent where a resumed step repeats it (a worker that died
 * after the command but before the save): the first time is kept. Stages reach these fields only here;
 * `set` takes the record's data (the plan, the tasks, the numbers), never its lifecycle.
 */

/** The fields only the transitions below may write. */
export const LIFECYCLE_FIELDS = [
  "step",
  "outcome",
  "finishedAt",
  "switch",
  "frontDoor",
  "flip",
  "restart",
  "rollback",
  "rollbackStartedAt",
  "cancel",
  "verified",
  "finalCheck",
  "healthyAt",
  "downtimeSeconds",
] as const;
export type LifecycleField = (typeof LIFECYCLE_FIELDS)[number];

/** What `set` may change: the record's data, never its lifecycle. */
export type DataPatch = Partial<Omit<SwapRecord, LifecycleField>>;

type R = Readonly<SwapRecord>;
type Patch = Partial<SwapRecord>;
type Switch = NonNullable<SwapRecord["switch"]>;
type Restart = NonNullable<SwapRecord["restart"]>;

function illegal(record: R, transition: string, state: string): never {
  throw new CodedError(
    "INTERNAL",
    `swap ${record.id}: "${transition}" cannot follow ${state} (step ${record.step})`,
    "this is a bug in modelswap: the swap stops here rather than write a record that is not what the host is; the bot's log has the record",
  );
}

function switchOf(record: R, transition: string): Switch {
  if (record.switch === undefined) illegal(record, transition, "a swap whose switch has not begun");
  return record.switch;
}

function restartOf(record: R, transition: string): Restart {
  if (record.restart === undefined) illegal(record, transition, "a swap with no restart at full memory");
  return record.restart;
}

/** Each transition: the record, the time now (ISO), its arguments → the fields it changes. */
export const transitions = {
  /** The job goes on to `next`. */
  stepTo(r: R, _at: string, next: SwapStep): Patch {
    if (r.step === "done") illegal(r, "stepTo", "the swap's end");
    return { step: next };
  },

  /** The switch begins, once, with the old unit's process (the new unit must be served by another). */
  switchBegun(r: R, at: string, oldMainPid: number, beside: boolean): Patch {
    if (r.switch !== undefined) return {};
    return { switch: { startedAt: at, oldMainPid, ...(beside ? { beside: true } : {}) } };
  },
  preloaded(r: R, _at: string, preload: NonNullable<Switch["preload"]>): Patch {
    const s = switchOf(r, "preloaded");
    return s.preload === undefined ? { switch: { ...s, preload } } : {};
  },
  oldStopBegan(r: R, at: string): Patch {
    const s = switchOf(r, "oldStopBegan");
    if (s.beside === true)
      illegal(r, "oldStopBegan", "a blue/green switch (its old unit stops after the window)");
    return s.stopBeganAt === undefined ? { switch: { ...s, stopBeganAt: at } } : {};
  },
  oldStopped(r: R, at: string): Patch {
    const s = switchOf(r, "oldStopped");
    return s.oldStoppedAt === undefined ? { switch: { ...s, oldStoppedAt: at } } : {};
  },
  /** The park request is about to be sent (the first time is kept). */
  parkBegan(r: R, at: string): Patch {
    const s = switchOf(r, "parkBegan");
    return s.parkBeganAt === undefined ? { switch: { ...s, parkBeganAt: at } } : {};
  },
  /** The wake request is about to be sent to the parked unit (the first time is kept). */
  wakeBegan(r: R, at: string): Patch {
    const s = switchOf(r, "wakeBegan");
    if (s.parked === undefined) illegal(r, "wakeBegan", "an old unit that was not parked");
    return s.parked.wakeBeganAt === undefined
      ? { switch: { ...s, parked: { ...s.parked, wakeBeganAt: at } } }
      : {};
  },
  /** The old unit parked in place of its stop (or, `failed`, stopped because it would not sleep). */
  parked(r: R, at: string, failed?: string): Patch {
    const s = switchOf(r, "parked");
    if (s.parked !== undefined) return {};
    return { switch: { ...s, parked: { at, ...(failed === undefined ? {} : { failed }) } } };
  },
  /** The parked unit answered its wake (in `seconds`); checkWoken asks it the sanity prompts next. */
  parkedWoken(r: R, at: string, seconds?: number): Patch {
    const s = switchOf(r, "parkedWoken");
    if (s.parked === undefined) illegal(r, "parkedWoken", "an old unit that was not parked");
    return s.parked.wokenAt === undefined
      ? {
          switch: {
            ...s,
            parked: { ...s.parked, wokenAt: at, ...(seconds === undefined ? {} : { wakeSeconds: seconds }) },
          },
        }
      : {};
  },
  /** The woken unit answered its sanity prompts. */
  parkedSane(r: R, _at: string): Patch {
    const s = switchOf(r, "parkedSane");
    if (s.parked?.wokenAt === undefined) illegal(r, "parkedSane", "an old unit that was not woken");
    return { switch: { ...s, parked: { ...s.parked, sane: true } } };
  },
  /** The parked unit would not wake, or woke and failed its sanity prompts: restarted from disk. */
  parkedReloaded(r: R, at: string): Patch {
    const s = switchOf(r, "parkedReloaded");
    if (s.parked === undefined) illegal(r, "parkedReloaded", "an old unit that was not parked");
    return s.parked.reloadedAt === undefined
      ? { switch: { ...s, parked: { ...s.parked, wokenAt: s.parked.wokenAt ?? at, reloadedAt: at } } }
      : {};
  },
  parkedStopped(r: R, at: string): Patch {
    const s = switchOf(r, "parkedStopped");
    if (s.parked === undefined) illegal(r, "parkedStopped", "an old unit that was not parked");
    return s.parked.stoppedAt === undefined
      ? { switch: { ...s, parked: { ...s.parked, stoppedAt: at } } }
      : {};
  },
  /** The new unit was enabled and started (the first start is kept). */
  /**
   * The in-place load is about to be asked for: the old weights stop serving now (the first time is kept;
   * a later ask, after a worker died, is the same load again).
   */
  updateBegan(r: R, at: string): Patch {
    const s = switchOf(r, "updateBegan");
    if (s.beside === true) illegal(r, "updateBegan", "a blue/green switch");
    if (s.inPlace !== undefined) return {};
    return { switch: { ...s, stopBeganAt: at, oldStoppedAt: at, inPlace: { beganAt: at } } };
  },
  /** The engine serves the new weights (`seconds` unknown when a later worker found them there). */
  updated(r: R, at: string, seconds: number | undefined): Patch {
    const s = switchOf(r, "updated");
    if (s.inPlace === undefined) illegal(r, "updated", "an in-place load never asked for");
    if (s.inPlace.at !== undefined) return {};
    return {
      switch: {
        ...s,
        newStartedAt: s.newStartedAt ?? at,
        done: true,
        inPlace: { ...s.inPlace, at, ...(seconds === undefined ? {} : { seconds }) },
      },
    };
  },
  /** The engine refused the new weights and kept serving the old ones. */
  updateRefused(r: R, _at: string, why: string): Patch {
    const s = switchOf(r, "updateRefused");
    if (s.inPlace === undefined) illegal(r, "updateRefused", "an in-place load never asked for");
    return { switch: { ...s, inPlace: { ...s.inPlace, refused: why } } };
  },
  /** The running unit's file now names the new model (the swap's takeRequests). */
  inPlaceUnitWritten(r: R, at: string): Patch {
    const s = switchOf(r, "inPlaceUnitWritten");
    if (s.inPlace === undefined) illegal(r, "inPlaceUnitWritten", "an in-place load never asked for");
    return s.inPlace.unitWrittenAt === undefined
      ? { switch: { ...s, inPlace: { ...s.inPlace, unitWrittenAt: at } } }
      : {};
  },
  /** The rollback's load of the old weights is about to be asked for (the first time is kept). */
  revertBegan(r: R, at: string): Patch {
    const s = switchOf(r, "revertBegan");
    if (s.inPlace === undefined) illegal(r, "revertBegan", "an in-place load never asked for");
    return s.inPlace.revertBeganAt === undefined
      ? { switch: { ...s, inPlace: { ...s.inPlace, revertBeganAt: at } } }
      : {};
  },
  /** The old weights serve again: loaded back (`restarted` false) or by a restart from the unit's file. */
  reverted(r: R, at: string, restarted: boolean): Patch {
    const s = switchOf(r, "reverted");
    if (s.inPlace === undefined) illegal(r, "reverted", "an in-place load never asked for");
    return {
      switch: { ...s, inPlace: { ...s.inPlace, ...(restarted ? { restartedAt: at } : { revertedAt: at }) } },
    };
  },
  newStarted(r: R, at: string): Patch {
    const s = switchOf(r, "newStarted");
    return { switch: { ...s, newStartedAt: s.newStartedAt ?? at, done: true } };
  },

  /** The new unit answered its health probe, as the unit modelswap started (`mainPid`). */
  healthy(r: R, at: string, unit: string, mainPid: number, downtimeSeconds: number): Patch {
    switchOf(r, "healthy");
    return { healthyAt: at, downtimeSeconds, verified: { unit, mainPid, at } };
  },
  /** The new unit's start: how long it took to its first healthy answer, and where that went. */
  started(_r: R, _at: string, startup: NonNullable<R["startup"]>): Patch {
    return { startup };
  },
  /** A unit found serving again, with its process (a rollback's old unit, a restarted new one). */
  verified(r: R, at: string, unit: string, mainPid: number): Patch {
    switchOf(r, "verified");
    return { verified: { unit, mainPid, at } };
  },
  /** Downtime from the old unit's stop to `at` (a rollback's old unit healthy again). */
  downtimeUntil(r: R, at: string): Patch {
    const stopped = switchOf(r, "downtimeUntil").oldStoppedAt;
    if (stopped === undefined) return {};
    return { downtimeSeconds: Math.max(0, (Date.parse(at) - Date.parse(stopped)) / 1000) };
  },
  /** No unit is healthy: the downtime runs to the swap's end (swap-tally's downtimeOf). */
  downtimeOpen(r: R, _at: string): Patch {
    switchOf(r, "downtimeOpen");
    return { downtimeSeconds: undefined };
  },

  /** A cold swap's front door holds new requests (the old unit's slot drained). */
  held(r: R, at: string): Patch {
    switchOf(r, "held");
    return r.frontDoor === undefined ? { frontDoor: { heldAt: at } } : {};
  },
  drained(r: R, at: string, cut: number): Patch {
    const held = r.frontDoor ?? illegal(r, "drained", "a front door that holds nothing");
    return held.drainedAt === undefined ? { frontDoor: { ...held, drainedAt: at, cut } } : {};
  },
  released(r: R, at: string): Patch {
    const held = r.frontDoor ?? illegal(r, "released", "a front door that holds nothing");
    return held.releasedAt === undefined ? { frontDoor: { ...held, releasedAt: at } } : {};
  },
  /** A rollback holds again what the switch had released (the switch's drain and cut are kept). */
  heldAgain(r: R, at: string): Patch {
    const held = r.frontDoor ?? illegal(r, "heldAgain", "a front door that held nothing");
    const { releasedAt: _sent, ...drain } = held;
    return { frontDoor: { ...drain, heldAt: at, heldAgain: true } };
  },

  /** Blue/green: the front door sent new requests to the new unit's slot (`to`) and drains `from`. */
  flipped(r: R, at: string, from: string, to: string): Patch {
    if (switchOf(r, "flipped").beside !== true)
      illegal(r, "flipped", "a unit not started beside the old one");
    return r.flip === undefined ? { flip: { from, to, flippedAt: at }, downtimeSeconds: 0 } : {};
  },
  windowDrained(r: R, at: string, cut: number): Patch {
    const flip = r.flip ?? illegal(r, "windowDrained", "no flip");
    return flip.drainedAt === undefined ? { flip: { ...flip, drainedAt: at, cut } } : {};
  },
  retiring(r: R, at: string): Patch {
    const flip = r.flip ?? illegal(r, "retiring", "no flip");
    if (flip.flippedBackAt !== undefined) illegal(r, "retiring", "a flip back");
    return flip.retiringAt === undefined ? { flip: { ...flip, retiringAt: at } } : {};
  },
  retired(r: R, at: string): Patch {
    const flip = r.flip ?? illegal(r, "retired", "no flip");
    if (flip.retiringAt === undefined) illegal(r, "retired", "an old unit whose retirement never began");
    return flip.retiredAt === undefined ? { flip: { ...flip, retiredAt: at } } : {};
  },
  flippedBack(r: R, at: string): Patch {
    const flip = r.flip ?? illegal(r, "flippedBack", "no flip");
    if (flip.retiringAt !== undefined) illegal(r, "flippedBack", "an old unit already stopping");
    return flip.flippedBackAt === undefined ? { flip: { ...flip, flippedBackAt: at } } : {};
  },

  /** Blue/green on shared GPUs: the restart at full memory, step by step (restart-full-memory.ts). */
  restartHeld(r: R, at: string): Patch {
    if (r.flip?.retiredAt === undefined) illegal(r, "restartHeld", "an old unit not yet retired");
    return r.restart === undefined ? { restart: { heldAt: at } } : {};
  },
  restartDrained(r: R, at: string, cut: number): Patch {
    const restart = restartOf(r, "restartDrained");
    return restart.drainedAt === undefined ? { restart: { ...restart, drainedAt: at, cut } } : {};
  },
  restarted(r: R, at: string): Patch {
    const restart = restartOf(r, "restarted");
    return restart.restartedAt === undefined ? { restart: { ...restart, restartedAt: at } } : {};
  },
  /** The restart at full memory did not serve: the unit goes back as it served beside (started anew). */
  restartFailed(r: R, _at: string, why: string): Patch {
    const { restartedAt: _again, ...restart } = restartOf(r, "restartFailed");
    return { restart: { ...restart, failed: why } };
  },
  restartReverted(r: R, _at: string): Patch {
    const restart = restartOf(r, "restartReverted");
    if (restart.failed === undefined) illegal(r, "restartReverted", "a restart that did not fail");
    return { restart: { ...restart, reverted: true } };
  },
  restartReleased(r: R, at: string): Patch {
    const restart = restartOf(r, "restartReleased");
    return restart.releasedAt === undefined ? { restart: { ...restart, releasedAt: at } } : {};
  },

  /** The rollback began (its announcement is made once, however often it is retried). */
  rollbackBegan(r: R, at: string): Patch {
    switchOf(r, "rollbackBegan");
    return r.rollbackStartedAt === undefined ? { rollbackStartedAt: at } : {};
  },
  /** What the rollback came to (or, later, what the final check found of it). */
  rolledBack(r: R, _at: string, ok: boolean, detail: string): Patch {
    switchOf(r, "rolledBack");
    return { rollback: { ok, detail } };
  },

  /** A cancel request taken (the first is kept). */
  cancelTaken(r: R, _at: string, request: { by: string; at: string }): Patch {
    if (r.outcome !== undefined) illegal(r, "cancelTaken", "the swap's end");
    return r.cancel === undefined ? { cancel: request } : {};
  },
  /** The cancel is not carried out: what it would go back to no longer serves. */
  cancelRefused(r: R, _at: string, why: string): Patch {
    const cancel = r.cancel ?? illegal(r, "cancelRefused", "no cancel");
    return { cancel: { ...cancel, refused: why } };
  },

  /** What the last check of the host saw (jobs/swap/stages/final-check.ts). */
  checked(r: R, _at: string, check: NonNullable<SwapRecord["finalCheck"]>): Patch {
    switchOf(r, "checked");
    return { finalCheck: check };
  },

  /** The end: the outcome, once. */
  finished(r: R, at: string, outcome: SwapOutcome): Patch {
    if (r.outcome !== undefined && r.step === "done") illegal(r, "finished", `the swap's end (${r.outcome})`);
    return { outcome, step: "done", finishedAt: at };
  },
};

type Transitions = typeof transitions;

/** The transitions as a swap's state offers them: the record and the time are its own. */
export type SwapTransitions = {
  [K in keyof Transitions]: Transitions[K] extends (r: R, at: string, ...args: infer A) => Patch
    ? (...args: A) => void
    : never;
};
