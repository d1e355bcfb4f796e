import { unitCommands } from "../../../src/engine/unit-commands.ts";
import { describeError, passesThrough } from "../../../src/errors.ts";
import type { SwapPlan } from "../../../src/plan/types.ts";
import type { StageContext } from "../../../src/swap/stage-context.ts";
import type { SwapRecord } from "../../../src/swap/swap-record.ts";
import { oldUnitPort } from "../../../src/swap/unit-ports.ts";
import { stopLimitMs } from "./unit-steps.ts";

/*
 * A cold swap that parks the old unit (plan.clients.park, swaps.sleepMode): instead of stopping it, the
 * switch puts it to sleep (its engine's sleep mode: weights to host RAM, GPUs free); a rollback wakes it
 * in seconds; once the new model is released, it stops. Each step is recorded (switch.parked), and each
 * command is idempotent (a sleeping server asked to sleep again, or a woken one to wake, answers 200), so
 * a worker that dies anywhere here is followed by one that goes on.
 */

/** How long a sleep or a wake may take: the weights cross PCIe both ways (a 400 GB model: minutes). */
const SLEEP_LIMIT_SECONDS = 600;

/** Whether this swap's plan parks the old unit. */
export function parks(plan: SwapPlan | undefined): boolean {
  return plan?.clients?.park?.will === true;
}

/** Whether the old unit is parked now (asleep: neither woken nor stopped, nor failed to sleep). */
export function isParked(record: Readonly<SwapRecord>): boolean {
  const parked = record.switch?.parked;
  return (
    parked !== undefined &&
    parked.failed === undefined &&
    parked.wokenAt === undefined &&
    parked.stoppedAt === undefined
  );
}

/**
 * Parks the old unit, in place of its stop. A server that will not sleep (its answer is not 200) is
 * stopped instead, as a cold swap would, and the thread says so: the swap goes on, a rollback reloads it.
 */
export async function parkOld(
  ctx: Pick<StageContext, "clock" | "emit" | "host" | "previousEngine" | "swap">,
): Promise<void> {
  const { swap, host, clock } = ctx;
  const record = swap.record;
  if (record.switch?.parked !== undefined) return;
  const oldUnit = record.previous!.unit;
  const sleep = ctx.previousEngine.sleep;
  const began = clock.now();
  let failed: string | undefined;
  if (sleep === undefined) failed = `${ctx.previousEngine.name} has no sleep mode`;
  else {
    const port = oldUnitPort(record, host.config.servingPort);
    const result = await host.tryChange(sleep.sleepCommand(port, SLEEP_LIMIT_SECONDS), {
      timeoutMs: (SLEEP_LIMIT_SECONDS + 30) * 1000,
    });
    const status = result.stdout.trim().split("\n").at(-1) ?? "";
    if (status !== "200")
      failed = `POST /sleep answered ${status === "000" || status === "" ? `nothing (curl exit ${result.code})` : `HTTP ${status}`}`;
  }
  if (failed !== undefined) {
    await host.change(unitCommands.disableNow(oldUnit), `stopping ${oldUnit}`, {
      privileged: true,
      timeoutMs: stopLimitMs(swap.record.plan!.host.currentUnit.text),
    });
  }
  const seconds = (clock.now() - began) / 1000;
  swap.to.parked(failed);
  ctx.emit({ type: "parked", unit: oldUnit, seconds, ...(failed === undefined ? {} : { failed }) });
  await swap.checkpoint();
}

/**
 * The rollback's way back to a parked unit: wake it. One that will not wake is stopped and started
 * again (a cold reload, the commands the sudo rules allow), which the caller's health wait then awaits.
 */
export async function wakeParked(
  ctx: Pick<StageContext, "clock" | "emit" | "host" | "log" | "previousEngine" | "swap">,
): Promise<void> {
  const { swap, host, clock } = ctx;
  const oldUnit = swap.record.previous!.unit;
  const sleep = ctx.previousEngine.sleep;
  const began = clock.now();
  let woken = false;
  if (sleep !== undefined) {
    const port = oldUnitPort(swap.record, host.config.servingPort);
    const result = await host.tryChange(sleep.wakeCommand(port, SLEEP_LIMIT_SECONDS), {
      timeoutMs: (SLEEP_LIMIT_SECONDS + 30) * 1000,
    });
    woken = result.stdout.trim().split("\n").at(-1) === "200";
  }
  if (!woken) {
    ctx.log.warn({ unit: oldUnit }, "the parked unit did not wake; restarting it");
    await host.tryChange(unitCommands.disableNow(oldUnit), {
      privileged: true,
      timeoutMs: stopLimitMs(swap.record.plan!.host.currentUnit.text),
    });
    await host.change(unitCommands.enableNow(oldUnit), `starting ${oldUnit}`, { privileged: true });
  }
  swap.to.parkedWoken();
  ctx.emit({
    type: "unparked",
    unit: oldUnit,
    how: "woken",
    ...(woken ? { seconds: (clock.now() - began) / 1000 } : {}),
  });
  await swap.checkpoint();
}

/**
 * Once the new model is released, the parked unit stops (and is disabled, as a cold swap's old unit).
 * Its stop never fails the swap: the new model serves, and the audit says what was left.
 */
export async function stopParked(ctx: Pick<StageContext, "emit" | "host" | "swap">): Promise<void> {
  const { swap, host } = ctx;
  if (!isParked(swap.record)) return;
  const oldUnit = swap.record.previous!.unit;
  try {
    await host.change(unitCommands.disableNow(oldUnit), `stopping ${oldUnit}`, {
      privileged: true,
      timeoutMs: stopLimitMs(swap.record.plan!.host.currentUnit.text),
    });
  } catch (error) {
    if (passesThrough(error)) throw error;
    swap.audit("stage", `the parked unit ${oldUnit} could not be stopped: ${describeError(error)}`);
    return;
  }
  swap.to.parkedStopped();
  ctx.emit({ type: "unparked", unit: oldUnit, how: "stopped" });
  await swap.checkpoint();
}
