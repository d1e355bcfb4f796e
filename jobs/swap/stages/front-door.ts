import { describeError, passesThrough } from "../../../src/errors.ts";
import { checkFrontDoor } from "../../../src/front-door/front-door-check.ts";
import { type HostFrontDoor, otherSlot, slotAt } from "../../../src/front-door/host-front-door.ts";
import type { BlueGreenInput } from "../../../src/plan/plan-input.ts";
import type { ClientPlan, PlanCheck } from "../../../src/plan/types.ts";
import { secondsBetween } from "../../../src/swap/client-impact.ts";
import type { HostPort, StageContext, StageSettings, StepResult } from "../../../src/swap/stage-context.ts";
import { waitDrained } from "./wait-drained.ts";

/*
 * The front door's part of a cold swap (docs/front-door.md): before the old unit stops, `hold` is made
 * ready and `server` drained, so new requests wait in HAProxy (retried once a second while hold's port
 * refuses) and requests in flight run to their end; the old unit stops once none is left, or when the
 * drain's bound runs out. Health and sanity then run against the new unit directly, and only then are
 * the held requests sent to it (`server` ready, then `hold` out). One slot is ready at every moment:
 * the next one is readied before the current one leaves. Every change is idempotent and recorded, so a
 * worker that dies anywhere here is followed by one that makes the same changes again.
 */

/**
 * How clients will see this swap, for the plan, the front door's check (read from HAProxy) when the
 * host has one, and where a blue/green swap could start the new unit (the standby slot). `livePort`
 * is the port of the unit serving now.
 */
export async function planClients(
  host: HostPort,
  livePort: number,
  settings: Pick<StageSettings, "flipBackSeconds" | "sharedBenchmark" | "restartAtFullMemory">,
): Promise<{ clients: ClientPlan; check?: PlanCheck; blueGreen: BlueGreenInput }> {
  const fd = host.frontDoor;
  const clients: ClientPlan = { mode: "cold", drainSeconds: host.config.drainSeconds };
  const blueGreen = (standby: BlueGreenInput["standby"]): BlueGreenInput => ({ standby, ...settings });
  if (fd === undefined)
    return {
      clients,
      blueGreen: blueGreen({ missing: "the host has no front door to flip (hosts[].frontDoor)" }),
    };
  const live = slotAt(fd, livePort) ?? { server: fd.server, port: livePort };
  const standby = otherSlot(fd, live);
  return {
    clients: {
      ...clients,
      frontDoor: { server: live.server, from: live.server, hold: fd.hold, holdSeconds: fd.holdSeconds },
    },
    check: await checkFrontDoor(fd, livePort),
    blueGreen: blueGreen(
      standby ?? { missing: "the host's front door has no standby slot (hosts[].frontDoor.standby)" },
    ),
  };
}

/**
 * `hold` ready, then `server` drained, on one Runtime API line. Apart, a request retrying on a `server`
 * that refuses (its unit already dead) could be retried while both are ready and both refuse: HAProxy
 * then redispatches at once instead of after the 1 s turn-around, spends every retry in milliseconds and
 * answers 503 (1–2 of ~1000 requests with the two commands 5 ms apart, none on one line: 2.6.12).
 */
async function holdNew(ctx: StageContext, fd: HostFrontDoor): Promise<void> {
  await fd.door.setStates([
    [fd.hold, "ready"],
    [coldSlots(ctx, fd).from, "drain"],
  ]);
}

/**
 * A cold swap's slots: `from`, the old unit's (drained), and `to`, the new one's (released to): the same
 * slot, except for a rollback to a unit on the other slot's port. Plans made before there were two name
 * the config's `server` only.
 */
export function coldSlots(ctx: Pick<StageContext, "swap">, fd: HostFrontDoor): { from: string; to: string } {
  const door = ctx.swap.record.plan?.clients?.frontDoor;
  const to = door?.server ?? fd.server;
  return { from: door?.from ?? to, to };
}

/**
 * Holds new requests and drains the old unit's slot, then waits (bounded by the host's drainSeconds,
 * counted from the hold, so a resumed wait does not start again) until its requests in flight end. A
 * host without a front door does nothing here: the old unit's stop drains it (SGLang on SIGTERM).
 */
export async function holdAndDrain(ctx: StageContext): Promise<void> {
  const fd = ctx.host.frontDoor;
  if (fd === undefined) return;
  const { swap } = ctx;
  await holdNew(ctx, fd);
  if (swap.record.frontDoor === undefined) {
    swap.to.held();
    await swap.checkpoint();
  }
  const held = swap.record.frontDoor!;
  if (held.drainedAt !== undefined) return;
  const { from } = coldSlots(ctx, fd);
  const inFlight = await waitDrained(
    ctx,
    fd,
    from,
    Date.parse(held.heldAt) + ctx.host.config.drainSeconds * 1000,
  );
  swap.to.drained(inFlight);
  const drainedAt = swap.record.frontDoor!.drainedAt!;
  ctx.emit({
    type: "drained",
    server: from,
    seconds: secondsBetween(held.heldAt, drainedAt)!,
    cut: inFlight,
    holdSeconds: fd.holdSeconds,
  });
  await swap.checkpoint();
}

/**
 * A cold swap's release step, after the sanity check: the held requests (and every new one) go to the
 * new unit. Without a front door there is nothing to release.
 */
export async function releaseStage(
  ctx: Pick<
    StageContext,
    "clock" | "emit" | "engine" | "host" | "log" | "previousEngine" | "settings" | "signal" | "swap"
  >,
): Promise<StepResult> {
  const fd = ctx.host.frontDoor;
  if (fd === undefined || ctx.swap.record.frontDoor === undefined) return { next: "benchmark" };
  // The new model is healthy and sane: a moment's trouble with HAProxy (a reload, a slow answer) is
  // tried again before the swap fails and rolls back for it.
  for (let attempt = 1; ; attempt++) {
    try {
      await release(ctx, fd);
      return { next: "benchmark" };
    } catch (error) {
      if (passesThrough(error) || attempt >= RELEASE_TRIES) throw error;
      ctx.log.warn({ err: describeError(error), attempt }, "the front door did not release; trying again");
      await ctx.clock.sleep(RELEASE_RETRY_MS, ctx.signal);
    }
  }
}

/** The release's tries, and the pause between them. */
const RELEASE_TRIES = 4;
const RELEASE_RETRY_MS = 2000;

/**
 * The new unit's slot ready, then `hold` out of the rotation (maint), and any other unit slot too (a
 * drained one whose unit is gone): the order keeps one slot ready at every moment. Records when, and says
 * how long new requests were held. Used by the rollback too, with the old unit's slot.
 */
export async function release(
  ctx: Pick<StageContext, "emit" | "swap">,
  fd: HostFrontDoor,
  slot = coldSlots(ctx, fd).to,
): Promise<void> {
  const { swap } = ctx;
  // in this order, on one Runtime API line: one slot is ready at every moment, and no request sees both
  await fd.door.setStates([
    [slot, "ready"],
    [fd.hold, "maint"],
    ...fd.slots.filter((s) => s.server !== slot).map((s) => [s.server, "maint"] as const),
  ]);
  const held = swap.record.frontDoor;
  if (held === undefined || held.releasedAt !== undefined) return;
  swap.to.released();
  const releasedAt = swap.record.frontDoor!.releasedAt!;
  ctx.emit({
    type: "released",
    server: slot,
    heldSeconds: secondsBetween(held.heldAt, releasedAt)!,
  });
}

/**
 * The rollback's hold: new requests wait again while the old unit comes back. When they had already been
 * sent to the new unit (released), it drains first, bounded by drainSeconds from now; a rollback that is
 * resumed drains again (what is in flight then is what matters).
 */
export async function holdForRollback(ctx: StageContext, fd: HostFrontDoor): Promise<void> {
  const { swap, clock } = ctx;
  const { to } = coldSlots(ctx, fd);
  const held = swap.record.frontDoor;
  if (held?.releasedAt === undefined) {
    await holdNew(ctx, fd);
    return;
  }
  await fd.door.setStates([
    [fd.hold, "ready"],
    [to, "drain"],
  ]);
  // held again from now (the switch's drain and what it cut are kept); released once the old unit is back
  swap.to.heldAgain();
  await waitDrained(ctx, fd, to, clock.now() + ctx.host.config.drainSeconds * 1000);
}
