import { isoNow } from "../../../src/clock.ts";
import { unitCommands } from "../../../src/engine/unit-commands.ts";
import { asCodedError, describeError, isHostUnreachable } from "../../../src/errors.ts";
import type { HostFrontDoor } from "../../../src/front-door/host-front-door.ts";
import type { SwapPlan } from "../../../src/plan/types.ts";
import { secondsBetween } from "../../../src/swap/client-impact.ts";
import { failedWith, type StageContext, type StepResult } from "../../../src/swap/stage-context.ts";
import type { SwapRecord } from "../../../src/swap/swap-record.ts";
import { newUnitPort } from "../../../src/swap/unit-ports.ts";
import type { RollbackResult } from "./rollback-result.ts";
import { beginSwitch, installUnit, stopLimitMs } from "./unit-steps.ts";
import { waitDrained } from "./wait-drained.ts";

/*
 * A blue/green swap (plan.clients.mode "bluegreen", docs/front-door.md): the new unit starts beside the
 * old one, on GPUs and a port of its own (the front door's standby slot), while production stays on the
 * old unit. Health, sanity and (on spare GPUs) the benchmark run against the new unit directly; only
 * then does the front door flip: the new slot ready and the old one drained, on one Runtime API line.
 * The old unit stays loaded for swaps.flipBackSeconds, so that a rollback is a flip back; then, drained,
 * it stops. A gate that fails before the flip stops the new unit: production never saw it. Every change
 * is idempotent and recorded, so a worker killed anywhere here is followed by one that goes on.
 */

type BlueGreen = NonNullable<NonNullable<SwapPlan["clients"]>["blueGreen"]>;

/** The plan's blue/green part, when this swap is one. */
export function blueGreenOf(plan: SwapPlan | undefined): BlueGreen | undefined {
  return plan?.clients?.mode === "bluegreen" ? plan.clients.blueGreen : undefined;
}

/** The front door and the two slots of a blue/green swap. */
function slotsOf(ctx: StageContext): { fd: HostFrontDoor; from: string; to: string } {
  const fd = ctx.host.frontDoor;
  const door = ctx.swap.record.plan!.clients?.frontDoor;
  if (fd === undefined || door?.from === undefined)
    throw new Error("a blue/green swap needs the host's front door and the plan's slots");
  return { fd, from: door.from, to: door.server };
}

/** Stage 7 of a blue/green swap: write the new unit and start it beside the old one, which keeps serving. */
export async function startBeside(ctx: StageContext, beside: BlueGreen): Promise<StepResult> {
  const { swap, host, clock } = ctx;
  const plan = swap.record.plan!;
  const oldUnit = swap.record.previous!.unit;
  await beginSwitch(ctx, true);
  const where = `GPU${beside.devices.length === 1 ? "" : "s"} ${beside.devices.join(",")}, port ${beside.port}`;
  await swap.begin("switch", `${plan.unitName} beside ${oldUnit} (${where})`);
  try {
    await installUnit(ctx);
    await host.must(host.privileged(unitCommands.enableNow(plan.unitName)), `starting ${plan.unitName}`);
  } catch (error) {
    if (isHostUnreachable(error)) throw error;
    swap.stage("switch", "failed", asCodedError(error).message);
    return failedWith(error, true);
  }
  const started = swap.record.switch!;
  swap.set({ switch: { ...started, newStartedAt: started.newStartedAt ?? isoNow(clock), done: true } });
  swap.stage(
    "switch",
    "done",
    `${plan.unitName} started beside ${oldUnit} (${where}); production stays on ${oldUnit}`,
  );
  ctx.emit({
    type: "switched",
    to: plan.unitName,
    beside: { devices: beside.devices, port: beside.port, gpus: beside.gpus },
  });
  return { next: "health" };
}

/** Where a blue/green swap goes after its sanity check: the benchmark first, unless it runs after the flip. */
export function afterSanity(beside: BlueGreen): SwapRecord["step"] {
  return beside.benchmark === "after-flip" ? "release" : "benchmark";
}

/** Where a blue/green swap goes after its benchmark: the flip, or (after it) the flip-back window. */
export function afterBenchmark(record: Readonly<SwapRecord>): SwapRecord["step"] {
  return record.flip === undefined ? "release" : "retire";
}

/**
 * The flip: `to` ready and `from` drained, on one line (no request sees neither ready). Recorded once;
 * a worker that dies before the record is saved flips again, which changes nothing.
 */
export async function flipStage(ctx: StageContext): Promise<StepResult> {
  const { swap, clock } = ctx;
  const { fd, from, to } = slotsOf(ctx);
  await fd.door.setStates([
    [to, "ready"],
    [from, "drain"],
  ]);
  if (swap.record.flip === undefined) {
    const flippedAt = isoNow(clock);
    swap.set({ flip: { from, to, flippedAt }, downtimeSeconds: 0 });
    const until = new Date(Date.parse(flippedAt) + ctx.settings.flipBackSeconds * 1000).toISOString();
    ctx.emit({ type: "flipped", from, to, flipBackUntil: until });
    await swap.checkpoint();
  }
  return { next: swap.record.stages.benchmark.state === "pending" ? "benchmark" : "retire" };
}

/** How long a parked flip-back window sleeps between looks (a cancel is seen at the next one). */
const WINDOW_LOOK_MS = 1000;

/**
 * The retire step: the old unit stays loaded (drained, taking nothing new) until the flip-back window
 * ends, looked at every second so that a cancel flips back; then it drains to 0 requests in flight
 * (bounded by drainSeconds from the flip), is put in maint and stopped. Its stop never fails the swap:
 * the new unit serves, and the thread says what was left.
 */
export async function retireStage(ctx: StageContext): Promise<StepResult> {
  const { swap, clock, host } = ctx;
  const { fd, from } = slotsOf(ctx);
  const flip = swap.record.flip!;
  const flippedAt = Date.parse(flip.flippedAt);
  if (flip.retiringAt === undefined) {
    const left = flippedAt + ctx.settings.flipBackSeconds * 1000 - clock.now();
    if (left > 0) {
      // each look also sees whether the old unit's last requests have ended (the drain, to within a look)
      if (flip.drainedAt === undefined && (await fd.door.sessions(from)) === 0) {
        swap.set({ flip: { ...flip, drainedAt: isoNow(clock), cut: 0 } });
        await swap.checkpoint();
      }
      return { wait: Math.min(left, WINDOW_LOOK_MS) };
    }
    swap.set({ flip: { ...flip, retiringAt: isoNow(clock) } });
    await swap.checkpoint();
  }
  const oldUnit = swap.record.previous!.unit;
  const plan = swap.record.plan!;
  let cut = swap.record.flip!.cut;
  if (swap.record.flip!.drainedAt === undefined) {
    cut = await waitDrained(ctx, fd, from, flippedAt + host.config.drainSeconds * 1000);
    swap.set({ flip: { ...swap.record.flip!, drainedAt: isoNow(clock), cut } });
    await swap.checkpoint();
  }
  try {
    await fd.door.setState(from, "maint");
    if (plan.host.currentUnit.exists && oldUnit !== plan.unitName)
      await host.must(host.privileged(unitCommands.disableNow(oldUnit)), `stopping ${oldUnit}`, {
        timeoutMs: stopLimitMs(plan.host.currentUnit.text),
      });
  } catch (error) {
    if (isHostUnreachable(error)) throw error;
    ctx.log.warn({ err: describeError(error) }, "the old unit could not be retired; the new one serves");
    swap.audit(
      "stage",
      `the old unit ${oldUnit} could not be stopped after the flip: ${describeError(error)}`,
    );
  }
  const done = swap.record.flip!;
  if (done.retiredAt === undefined) {
    const retiredAt = isoNow(clock);
    swap.set({ flip: { ...done, retiredAt } });
    ctx.emit({
      type: "retired",
      unit: oldUnit,
      drainSeconds: secondsBetween(done.flippedAt, done.drainedAt) ?? 0,
      cut: cut ?? 0,
    });
  }
  return { next: afterRetire(swap.record) };
}

/**
 * Where a blue/green swap goes after its retire step: the restart at full memory when the plan has one
 * (jobs/swap/stages/restart-full-memory.ts), else the end.
 */
function afterRetire(record: Readonly<SwapRecord>): SwapRecord["step"] {
  return blueGreenOf(record.plan)?.restart === undefined ? "finish" : "restart";
}

/**
 * A blue/green swap's rollback. Before the flip: the front door is made sure to point at the old unit
 * (a worker that died between the flip and its record may have flipped), and the new unit is stopped;
 * production never saw it. After the flip: a flip back to the old unit, still loaded, then the new unit
 * drains and stops.
 */
export async function undoBlueGreen(ctx: StageContext, why: string): Promise<RollbackResult> {
  const { swap, host, clock } = ctx;
  const plan = swap.record.plan!;
  const oldUnit = swap.record.previous!.unit;
  const { fd, from, to } = slotsOf(ctx);
  const flipped = swap.record.flip !== undefined;
  if (swap.record.rollbackStartedAt === undefined) {
    swap.set({ rollbackStartedAt: isoNow(clock) });
    if (flipped) ctx.emit({ type: "rolling-back", to: oldUnit, stopping: plan.unitName, why });
  }
  try {
    await fd.door.setStates([
      [from, "ready"],
      [to, "drain"],
    ]);
    const flip = swap.record.flip;
    if (flip !== undefined && flip.flippedBackAt === undefined) {
      swap.set({ flip: { ...flip, flippedBackAt: isoNow(clock) } });
      ctx.emit({ type: "flipped-back", to: from, unit: oldUnit });
      await swap.checkpoint();
    }
    if (flipped) await waitDrained(ctx, fd, to, clock.now() + host.config.drainSeconds * 1000);
    await fd.door.setState(to, "maint");
    await host.exec(host.privileged(unitCommands.disableNow(plan.unitName)), {
      timeoutMs: stopLimitMs(plan.unitText),
    });
  } catch (error) {
    return {
      ok: false,
      detail: describeError(error),
      ...(isHostUnreachable(error) ? { unreachable: error } : {}),
    };
  }
  if (!flipped) {
    if (!swap.record.rollback) ctx.emit({ type: "discarded", unit: plan.unitName, serving: oldUnit });
    return {
      ok: true,
      nothingToUndo: true,
      detail: `${plan.unitName} stopped; production stayed on ${oldUnit} and never saw the new model`,
    };
  }
  return { ok: true, detail: `flipped back to ${oldUnit}, which never stopped; ${plan.unitName} stopped` };
}

/** The new unit's port (the standby slot's in a blue/green swap). */
export function portOf(ctx: Pick<StageContext, "swap" | "host">): number {
  return newUnitPort(ctx.swap.record.plan!, ctx.host.config.servingPort);
}
