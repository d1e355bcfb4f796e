import { duration } from "../format-duration.ts";
import type { SwapRecord } from "./swap-record.ts";

/**
 * What clients saw of a swap, from its record: how (held by the front door, or refused while no unit
 * listened), for how long at most, and where the time went. The card, the final line and `/llm history`
 * all say it from here, so they say the same.
 */
export interface ClientImpact {
  /**
   * `held`: behind a front door (or, in place, in the engine), new requests waited; `refused`: nothing listened on the port;
   * `flipped`: blue/green, the front door moved new requests to the new unit at once (flipped back too,
   * when `back`); `unseen`: blue/green that ended before its flip, production never saw the new unit.
   */
  mode: "held" | "refused" | "flipped" | "unseen";
  /** Blue/green rolled back by a flip back. */
  back?: boolean;
  /** The longest a new request waited (held) or the time it would have been refused (refused), in s. */
  gapSeconds: number;
  /** Requests still in flight when the drain's bound ran out (front door only). */
  cut?: number;
  /**
   * Blue/green on shared GPUs: how long new requests were held while the new unit restarted at full
   * memory after the old one stopped (`gapSeconds` is this, the only wait of such a swap).
   */
  restartHeldSeconds?: number;
  /**
   * Seconds of each phase that took place: drain, stop (or park, when the old unit was parked instead),
   * load (start to healthy), sanity.
   */
  phases: {
    drain?: number;
    stop?: number;
    park?: number;
    /** In place: the engine's load of the new weights (no stop, no start). */
    update?: number;
    load?: number;
    sanity?: number;
  };
}

/** Seconds from one ISO time of a record to another (never negative); undefined when either is unknown. */
export function secondsBetween(from: string | undefined, to: string | undefined): number | undefined {
  return from === undefined || to === undefined
    ? undefined
    : Math.max(0, (Date.parse(to) - Date.parse(from)) / 1000);
}

/** Undefined until the switch has stopped the old unit (nothing clients could notice before). */
export function clientImpact(record: SwapRecord): ClientImpact | undefined {
  const sw = record.switch;
  if (sw?.beside === true) return blueGreenImpact(record);
  if (sw?.oldStoppedAt === undefined) return undefined;
  const fd = record.frontDoor;
  const stop = secondsBetween(sw.stopBeganAt, sw.oldStoppedAt);
  // a park that worked left the old unit running (its weights in host RAM): that phase was its park
  const parked = sw.parked !== undefined && sw.parked.failed === undefined;
  const inPlace = sw.inPlace;
  const phases: ClientImpact["phases"] = {
    ...(fd?.drainedAt === undefined ? {} : { drain: secondsBetween(fd.heldAt, fd.drainedAt)! }),
    ...(inPlace !== undefined || stop === undefined ? {} : parked ? { park: stop } : { stop }),
  };
  // in place, the load is the engine's: from the ask to its answer (the health probe after it is not one)
  const update = inPlace?.seconds ?? secondsBetween(inPlace?.beganAt, inPlace?.at);
  if (update !== undefined) phases.update = update;
  const load = inPlace !== undefined ? undefined : secondsBetween(sw.newStartedAt, record.healthyAt);
  if (load !== undefined) phases.load = load;
  const sanity = secondsBetween(record.stages.sanity.startedAt, record.stages.sanity.finishedAt);
  if (sanity !== undefined && record.stages.sanity.state === "done") phases.sanity = sanity;
  if (fd !== undefined) {
    const end = fd.releasedAt ?? record.finishedAt;
    const gap = secondsBetween(fd.heldAt, end);
    if (gap === undefined) return undefined;
    return { mode: "held", gapSeconds: gap, ...(fd.cut === undefined ? {} : { cut: fd.cut }), phases };
  }
  if (record.downtimeSeconds === undefined) return undefined;
  // in place without a front door, the engine itself held new requests (its writer lock) while it loaded
  return { mode: inPlace === undefined ? "refused" : "held", gapSeconds: record.downtimeSeconds, phases };
}

/** A blue/green swap: load and sanity beside production, the old unit's drain after the flip; no gap. */
function blueGreenImpact(record: SwapRecord): ClientImpact | undefined {
  const sw = record.switch!;
  const phases: ClientImpact["phases"] = {};
  const load = secondsBetween(sw.newStartedAt, record.healthyAt);
  if (load !== undefined) phases.load = load;
  const sanity = secondsBetween(record.stages.sanity.startedAt, record.stages.sanity.finishedAt);
  if (sanity !== undefined && record.stages.sanity.state === "done") phases.sanity = sanity;
  const flip = record.flip;
  if (flip === undefined)
    return record.outcome === undefined ? undefined : { mode: "unseen", gapSeconds: 0, phases };
  const drain = secondsBetween(flip.flippedAt, flip.drainedAt);
  if (drain !== undefined) phases.drain = drain;
  const restart = record.restart;
  const held = secondsBetween(restart?.heldAt, restart?.releasedAt ?? record.finishedAt);
  return {
    mode: "flipped",
    gapSeconds: held ?? 0,
    ...(held === undefined ? {} : { restartHeldSeconds: held }),
    ...(flip.flippedBackAt === undefined ? {} : { back: true }),
    ...(flip.cut === undefined ? {} : { cut: flip.cut }),
    phases,
  };
}

const PHASE_WORDS = {
  drain: "drain",
  stop: "stop",
  park: "park",
  update: "load in place",
  load: "load",
  sanity: "sanity",
} as const;

/** "held 7.6 s (drain 2.6 s · stop 0.4 s · load 3.1 s · sanity 0.9 s)", "refused 5.2 s (…)". */
export function impactText(impact: ClientImpact): string {
  const parts = (Object.keys(PHASE_WORDS) as (keyof typeof PHASE_WORDS)[])
    .filter((k) => impact.phases[k] !== undefined)
    .map((k) => `${PHASE_WORDS[k]} ${duration(impact.phases[k]!)}`);
  const cut = impact.cut !== undefined && impact.cut > 0 ? `, ${impact.cut} cut at the drain's bound` : "";
  if (impact.mode === "flipped" || impact.mode === "unseen") {
    const load = (["load", "sanity"] as const)
      .filter((k) => impact.phases[k] !== undefined)
      .map((k) => `${PHASE_WORDS[k]} ${duration(impact.phases[k]!)}`);
    const beside = load.length === 0 ? "" : ` (${load.join(" · ")} beside production`;
    const drain =
      impact.phases.drain === undefined ? "" : `; old unit drained in ${duration(impact.phases.drain)}`;
    const open = beside === "" ? (drain === "" ? "" : ` (${drain.slice(2)})`) : `${beside}${drain})`;
    if (impact.mode === "unseen") return `blue/green, production never saw the new unit${open}`;
    const restart =
      impact.restartHeldSeconds === undefined
        ? ""
        : `; then requests held ${duration(impact.restartHeldSeconds)} for the restart at full memory`;
    return `blue/green, no gap${impact.back === true ? ", flipped back" : ""}${cut}${open}${restart}`;
  }
  const how = impact.mode === "held" ? "requests held" : "requests refused";
  return `${how} ${duration(impact.gapSeconds)}${cut}${parts.length === 0 ? "" : ` (${parts.join(" · ")})`}`;
}
