import { duration, roughly } from "../format-duration.ts";
import { formatGiB } from "../plan/byte-units.ts";
import type { SwapPlan } from "../plan/types.ts";
import { code, prose } from "./plan-text.ts";

/**
 * How clients see the swap, before the approver decides: cold means the model is not served while the new
 * one loads; behind a front door requests wait instead of failing, within the hold's bound.
 */
export function clientsLine(plan: SwapPlan): string[] {
  const c = plan.clients;
  if (c === undefined) return [];
  if (c.inPlace?.will === true) return inPlaceLines(c, plan.expectedDowntimeSeconds);
  if (c.blueGreen !== undefined && c.frontDoor !== undefined)
    return blueGreenLines(c.blueGreen, c.frontDoor, c.why, plan.expectedDowntimeSeconds);
  const drain = `requests in flight finish first (up to ${duration(c.drainSeconds)})`;
  const why = [
    ...(c.why === undefined ? [] : [`*Why cold* ${prose(c.why, 600)}`]),
    ...(c.preload === undefined
      ? []
      : [`*Page cache* ${c.preload.will ? "yes" : "no"}: ${prose(c.preload.why, 400)}`]),
    ...(c.park === undefined
      ? []
      : [`*Old model* ${c.park.will ? "parked, not stopped" : "stopped"}: ${prose(c.park.why, 600)}`]),
    ...(c.inPlace === undefined ? [] : [`*In place* no: ${prose(c.inPlace.why, 400)}`]),
  ];
  const load = plan.expectedDowntimeSeconds;
  if (c.frontDoor === undefined)
    return [
      `*Clients* cold swap, no front door: ${drain}, then new requests fail (connection refused) for about ${roughly(load)} until the new model is healthy. A front door would hold them instead (docs/front-door.md).`,
      ...why,
    ];
  const fd = c.frontDoor;
  const past =
    load > fd.holdSeconds
      ? ` The load is expected to take longer than the hold: a request held past ${duration(fd.holdSeconds)} gets 503 \`front_door_hold_expired\`.`
      : "";
  return [
    `*Clients* cold swap behind the front door (HAProxy: slot ${code(fd.from ?? fd.server, 64)} drains, ${code(fd.hold, 64)} holds${(fd.from ?? fd.server) === fd.server ? "" : `, the new model on slot ${code(fd.server, 64)}`}): ${drain}; new requests are held (up to ${duration(fd.holdSeconds)}) while the new model loads, and sent to it once it is healthy and sane.${past === "" ? " None fails." : past}`,
    ...why,
  ];
}

/** A blue/green plan's client lines: where the new unit runs, how it is checked, the flip and its window. */
function blueGreenLines(
  bg: NonNullable<NonNullable<SwapPlan["clients"]>["blueGreen"]>,
  fd: NonNullable<NonNullable<SwapPlan["clients"]>["frontDoor"]>,
  why: string | undefined,
  loadSeconds: number,
): string[] {
  const gpus = `GPU${bg.devices.length === 1 ? "" : "s"} ${bg.devices.join(",")}`;
  const how = bg.gpus === "spare" ? "on spare GPUs" : "sharing GPUs";
  const bench =
    bg.benchmark === "before-flip"
      ? "health, sanity and the benchmark"
      : bg.benchmark === "reduced"
        ? "health, sanity and the benchmark at 4 streams (production shares these GPUs)"
        : "health and sanity (the benchmark runs after the flip: production shares these GPUs)";
  const restart =
    bg.restart === undefined
      ? " until its next restart"
      : `; once the old one has stopped, it restarts at full memory (swaps.restartAtFullMemory) behind the front door's hold: new requests wait for its load (about ${roughly(loadSeconds)}${loadSeconds > fd.holdSeconds ? `, longer than the hold's ${duration(fd.holdSeconds)}: requests past it get 503` : ""}), none fails`;
  const kv =
    bg.gpus === "shared"
      ? ` It serves with a ${formatGiB(bg.kvPerGpuBytes)}/GPU KV cache (${formatGiB(bg.fullKvPerGpuBytes)} alone)${restart}.`
      : "";
  const window =
    bg.flipBackSeconds > 0
      ? ` For ${duration(bg.flipBackSeconds)} after the flip the old model stays loaded: \`/llm cancel\` or \`/llm rollback\` flips back in about a second.`
      : " The old model stops as soon as it has drained (swaps.flipBackSeconds is 0: no flip back).";
  return [
    `*Clients* blue/green ${how} behind the front door (HAProxy: ${code(fd.server, 64)} takes new requests at the flip, ${code(fd.from ?? "?", 64)} drains): the new model loads on ${gpus} (port ${bg.port}) beside the one serving now and is checked there (${bench}); then the front door flips. No request waits or fails.${kv}${window}`,
    ...(why === undefined ? [] : [`*Why blue/green* ${prose(why, 600)}`]),
  ];
}

/** A load in place: the engine keeps running; new requests wait for the new weights and their checks. */
function inPlaceLines(c: NonNullable<SwapPlan["clients"]>, seconds: number): string[] {
  const drain = `requests in flight finish first (up to ${duration(c.drainSeconds)})`;
  const how = c.inPlace?.mechanism === undefined ? "" : ` (${code(c.inPlace.mechanism, 64)})`;
  const fd = c.frontDoor;
  return [
    fd === undefined
      ? `*Clients* in place, no front door: the engine${how} lets requests in flight finish and holds new ones while it loads the new weights (about ${roughly(seconds)}); none is refused, and they are answered by the new weights before their sanity check.`
      : `*Clients* in place behind the front door (HAProxy: slot ${code(fd.from ?? fd.server, 64)} drains, ${code(fd.hold, 64)} holds): ${drain}; new requests are held (up to ${duration(fd.holdSeconds)}) while the engine${how} loads the new weights (about ${roughly(seconds)}) and they pass health and sanity, then sent to it. None fails.`,
    `*In place* yes: ${prose(c.inPlace!.why, 600)}`,
    ...(c.preload === undefined
      ? []
      : [`*Page cache* ${c.preload.will ? "yes" : "no"}: ${prose(c.preload.why, 400)}`]),
  ];
}
