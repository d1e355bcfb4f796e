import { unitCommands } from "../../../src/engine/unit-commands.ts";
import { asCodedError, describeError, passesThrough } from "../../../src/errors.ts";
import type { HostFrontDoor } from "../../../src/front-door/host-front-door.ts";
import { sh } from "../../../src/host/shell-quote.ts";
import type { SwapPlan } from "../../../src/plan/types.ts";
import { secondsBetween } from "../../../src/swap/client-impact.ts";
import { failedWith, type StageContext, type StepResult } from "../../../src/swap/stage-context.ts";
import type { SwapRecord } from "../../../src/swap/swap-record.ts";
import { newUnitPort, oldUnitPort } from "../../../src/swap/unit-ports.ts";
import { type Expected, finalCheck } from "./final-check.ts";
import { type RollbackResult, rollbackFailed } from "./rollback-result.ts";
import { beginSwitch, installUnit, mainPid, stopLimitMs, stopOldUnit } from "./unit-steps.ts";
import { waitDrained } from "./wait-drained.ts";
import { waitHealthy } from "./wait-healthy.ts";

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
export function slotsOf(ctx: Pick<StageContext, "host" | "swap">): {
  fd: HostFrontDoor;
  from: string;
  to: string;
} {
  const fd = ctx.host.frontDoor;
  const door = ctx.swap.record.plan!.clients?.frontDoor;
  if (fd === undefined || door?.from === undefined)
    throw new Error("a blue/green swap needs the host's front door and the plan's slots");
  return { fd, from: door.from, to: door.server };
}

/** Stage 7 of a blue/green swap: write the new unit and start it beside the old one, which keeps serving. */
export async function startBeside(ctx: StageContext, beside: BlueGreen): Promise<StepResult> {
  const { swap, host } = ctx;
  const plan = swap.record.plan!;
  const oldUnit = swap.record.previous!.unit;
  await beginSwitch(ctx, true);
  const where = `GPU${beside.devices.length === 1 ? "" : "s"} ${beside.devices.join(",")}, port ${beside.port}`;
  await swap.begin("switch", `${plan.unitName} beside ${oldUnit} (${where})`);
  try {
    await installUnit(ctx);
    await host.change(unitCommands.enableNow(plan.unitName), `starting ${plan.unitName}`, {
      privileged: true,
    });
  } catch (error) {
    if (passesThrough(error)) throw error;
    swap.stage("switch", "failed", asCodedError(error).message);
    return failedWith(error, true);
  }
  swap.to.newStarted();
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

/**
 * The flip: `to` ready and `from` drained, on one line (no request sees neither ready). Only to a new unit
 * that serves now, on its own port (`expectNew`): the benchmark beside production may have run since its
 * sanity check, and a unit that died there is not given production. Recorded once; a worker that dies
 * before the record is saved flips again, which changes nothing.
 */
export async function flipStage(ctx: StageContext, expectNew: Expected): Promise<StepResult> {
  const { swap } = ctx;
  const { fd, from, to } = slotsOf(ctx);
  if (swap.record.flip === undefined) {
    const seen = await finalCheck(ctx, { ...expectNew, slot: undefined }, { direct: true });
    if (!seen.ok)
      return {
        fail: `the check before the flip found: ${seen.detail}`,
        touched: true,
        code: "HEALTH_FAILED",
        fix: `the journal of ${expectNew.unit} (journalctl -u ${expectNew.unit}) says why; production stayed on the old unit`,
      };
  }
  await fd.door.setStates([
    [to, "ready"],
    [from, "drain"],
  ]);
  if (swap.record.flip === undefined) {
    swap.to.flipped(from, to);
    const flippedAt = swap.record.flip!.flippedAt;
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
 * ends, looked at every second so that a cancel flips back, and so that a new unit that stops serving
 * (its process gone or another one in its place) is flipped back from at once, not at the window's end.
 * Then the new unit must pass the final check (`expectNew`: as a client sees it, through the front door)
 * before the old one drains to 0 requests in flight (bounded by drainSeconds from the flip), is put in
 * maint and stopped. Its stop never fails the swap: the new unit serves, and the thread says what was left.
 */
export async function retireStage(
  ctx: Pick<StageContext, "clock" | "emit" | "host" | "log" | "settings" | "signal" | "swap">,
  expectNew: Expected,
): Promise<StepResult> {
  const { swap, clock, host } = ctx;
  const { fd, from } = slotsOf(ctx);
  const flip = swap.record.flip!;
  const flippedAt = Date.parse(flip.flippedAt);
  if (flip.retiringAt === undefined) {
    const left = flippedAt + ctx.settings.flipBackSeconds * 1000 - clock.now();
    const gone = await stoppedServing(ctx, expectNew);
    if (gone !== undefined)
      return {
        fail: `\`${expectNew.unit}\` stopped serving in the flip-back window: ${gone}`,
        touched: true,
        code: "HEALTH_FAILED",
        fix: `the journal of ${expectNew.unit} (journalctl -u ${expectNew.unit}) says why it stopped; the old model took the requests back`,
      };
    if (left > 0) {
      // each look also sees whether the old unit's last requests have ended (the drain, to within a look)
      if (flip.drainedAt === undefined && (await fd.door.sessions(from)) === 0) {
        swap.to.windowDrained(0);
        await swap.checkpoint();
      }
      return { wait: Math.min(left, WINDOW_LOOK_MS) };
    }
    // the old unit is stopped only for a new one that serves, as a client sees it, now
    const seen = await finalCheck(ctx, expectNew);
    if (!seen.ok) {
      swap.to.checked(seen);
      return {
        fail: `the last check before stopping the old unit found: ${seen.detail}`,
        touched: true,
        code: "HEALTH_FAILED",
        fix: `the journal of ${expectNew.unit} (journalctl -u ${expectNew.unit}) says why; the old model took the requests back`,
      };
    }
    swap.to.retiring();
    await swap.checkpoint();
  }
  const oldUnit = swap.record.previous!.unit;
  const plan = swap.record.plan!;
  let cut = swap.record.flip!.cut;
  if (swap.record.flip!.drainedAt === undefined) {
    cut = await waitDrained(ctx, fd, from, flippedAt + host.config.drainSeconds * 1000);
    swap.to.windowDrained(cut);
    await swap.checkpoint();
  }
  try {
    await fd.door.setState(from, "maint");
    if (plan.host.currentUnit.exists && oldUnit !== plan.unitName) await stopOldUnit(ctx);
  } catch (error) {
    if (passesThrough(error)) throw error;
    ctx.log.warn({ err: describeError(error) }, "the old unit could not be retired; the new one serves");
    swap.audit(
      "stage",
      `the old unit ${oldUnit} could not be stopped after the flip: ${describeError(error)}`,
    );
  }
  const done = swap.record.flip!;
  if (done.retiredAt === undefined) {
    swap.to.retired();
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
 * Whether a unit that served has stopped: not active, no process, or another process than the one it
 * was checked with (it crashed, and systemd restarted it). Undefined while it runs as it did.
 */
async function stoppedServing(
  ctx: Pick<StageContext, "host">,
  unit: Pick<Expected, "unit" | "mainPid">,
): Promise<string | undefined> {
  const result = await ctx.host.exec(sh`systemctl show -p ActiveState -p SubState -p MainPID ${unit.unit}`);
  const props = Object.fromEntries(
    result.stdout
      .split("\n")
      .filter((l) => l.includes("="))
      .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1).trim()]),
  );
  const pid = Number(props.MainPID) || 0;
  const state = props.ActiveState ?? "unknown";
  if (state !== "active")
    return `it is ${state}${props.SubState && props.SubState !== state ? ` (${props.SubState})` : ""}`;
  if (pid === 0) return "it has no process";
  if (unit.mainPid !== undefined && unit.mainPid !== 0 && pid !== unit.mainPid)
    return `its process ${unit.mainPid} is gone (MainPID ${pid} now: it crashed and was restarted)`;
  return undefined;
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
 * production never saw it. After the flip: a flip back to the old unit, still loaded — but only to an old
 * unit that still serves (its process, its health on its port): one that died in the window gets nothing
 * sent back to it, nothing is stopped, and `notDone` says why. After the flip back, the new unit is
 * stopped only once the old one passed the final check through the front door (`expectOld`).
 */
export async function undoBlueGreen(
  ctx: Pick<StageContext, "clock" | "emit" | "host" | "log" | "settings" | "signal" | "swap">,
  why: string,
  expectOld: Expected,
): Promise<RollbackResult> {
  const { swap, host, clock } = ctx;
  const plan = swap.record.plan!;
  const oldUnit = swap.record.previous!.unit;
  const { fd, from, to } = slotsOf(ctx);
  const flipped = swap.record.flip !== undefined;
  try {
    if (flipped && swap.record.flip!.flippedBackAt === undefined) {
      const direct = await finalCheck(ctx, { ...expectOld, slot: undefined }, { direct: true });
      if (!direct.ok)
        return { ok: false, notDone: direct.detail, detail: `not flipped back: ${direct.detail}` };
    }
    if (swap.record.rollbackStartedAt === undefined) {
      swap.to.rollbackBegan();
      if (flipped) ctx.emit({ type: "rolling-back", to: oldUnit, stopping: plan.unitName, why });
    }
    await fd.door.setStates([
      [from, "ready"],
      [to, "drain"],
    ]);
    const flip = swap.record.flip;
    if (flip !== undefined && flip.flippedBackAt === undefined) {
      swap.to.flippedBack();
      ctx.emit({ type: "flipped-back", to: from, unit: oldUnit });
      await swap.checkpoint();
    }
    // the new unit is stopped only for an old one that serves, as a client sees it, now
    const seen = await finalCheck(ctx, expectOld);
    swap.to.checked(seen);
    if (!seen.ok)
      return { ok: false, detail: `flipped back, but ${seen.detail}; ${plan.unitName} left running` };
    if (flipped) await waitDrained(ctx, fd, to, clock.now() + host.config.drainSeconds * 1000);
    await fd.door.setState(to, "maint");
    await host.tryChange(unitCommands.disableNow(plan.unitName), {
      privileged: true,
      timeoutMs: stopLimitMs(plan.unitText),
    });
  } catch (error) {
    return rollbackFailed(error);
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

/**
 * A blue/green swap whose old unit was stopped after the window, undone: the new unit stopped, the old
 * one started again on its port (its file and engine untouched), its health awaited, and the front door
 * sent back to its slot. Clients get HAProxy's answer for a slot whose unit is down meanwhile: the new
 * unit, which is why this runs, no longer served.
 */
export async function bringBackRetired(
  ctx: Pick<
    StageContext,
    "clock" | "emit" | "host" | "log" | "previousEngine" | "settings" | "signal" | "swap"
  >,
  why: string,
): Promise<RollbackResult> {
  const { swap, host } = ctx;
  const plan = swap.record.plan!;
  const oldUnit = swap.record.previous!.unit;
  const { fd, from, to } = slotsOf(ctx);
  try {
    if (swap.record.rollbackStartedAt === undefined) {
      swap.to.rollbackBegan();
      ctx.emit({ type: "rolling-back", to: oldUnit, stopping: plan.unitName, why });
      await swap.checkpoint();
    }
    await host.tryChange(unitCommands.disableNow(plan.unitName), {
      privileged: true,
      timeoutMs: stopLimitMs(plan.unitText),
    });
    await host.change(unitCommands.enableNow(oldUnit), `starting ${oldUnit}`, { privileged: true });
    const port = oldUnitPort(swap.record, host.config.servingPort);
    const limit = ctx.settings.healthTimeoutSeconds ?? Math.max(600, plan.healthTimeoutSeconds);
    const health = await waitHealthy(
      { ...ctx, engine: ctx.previousEngine },
      oldUnit,
      limit,
      undefined,
      undefined,
      port,
    );
    if (!health.healthy) return { ok: false, detail: `${oldUnit} did not come back: ${health.why}` };
    swap.to.verified(oldUnit, health.mainPid || (await mainPid(ctx, oldUnit)));
    await fd.door.setStates([
      [from, "ready"],
      [to, "maint"],
    ]);
  } catch (error) {
    return rollbackFailed(error);
  }
  return {
    ok: true,
    detail: `${oldUnit} started again and healthy; the front door sends requests to \`${from}\``,
  };
}

/** The new unit's port (the standby slot's in a blue/green swap). */
export function portOf(ctx: Pick<StageContext, "swap" | "host">): number {
  return newUnitPort(ctx.swap.record.plan!, ctx.host.config.servingPort);
}
