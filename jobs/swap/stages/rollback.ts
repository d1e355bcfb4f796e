import { unitCommands } from "../../../src/engine/unit-commands.ts";
import { describeError, isHostUnreachable, isRunOver, passesThrough } from "../../../src/errors.ts";
import { sh } from "../../../src/host/shell-quote.ts";
import { interestingTail } from "../../../src/status/probe-host.ts";
import type { StageContext } from "../../../src/swap/stage-context.ts";
import { eventLines } from "../../../src/swap/swap-events.ts";
import { oldUnitPort } from "../../../src/swap/unit-ports.ts";
import { coldSlots, holdForRollback, release } from "./front-door.ts";
import { checkWoken, isParked, parkOld, reloadUnhealthyWoken, wakeParked } from "./park.ts";
import { type RollbackResult, rollbackFailed } from "./rollback-result.ts";
import { mainPid, stopLimitMs } from "./unit-steps.ts";
import { waitHealthy } from "./wait-healthy.ts";

/**
 * A cold swap's way back after a failure from the switch on: the new unit disabled and stopped, the old
 * unit enabled and started (or woken, when it was parked), and its health awaited; behind a front door,
 * new requests are held meanwhile and released to the old unit's slot. The old unit's file was never
 * rewritten and its engine never touched (each build has a directory of its own), so it runs exactly
 * what it ran before. Whether it then serves is for the final check to say.
 */
export async function undoCold(ctx: StageContext, why: string): Promise<RollbackResult> {
  return await frontDoorBack(ctx, await putBack(ctx, why));
}

/**
 * A cold or in-place rollback's end behind a front door that held requests: the old unit's slot ready and
 * the hold out, whatever came of `result` (one slot ready; with no unit up, requests are still retried on
 * the slot's closed port for the hold's bound, never dropped). The result, or why the front door could not
 * be put back.
 */
export async function frontDoorBack(ctx: StageContext, result: RollbackResult): Promise<RollbackResult> {
  const fd = ctx.host.frontDoor;
  if (fd === undefined || ctx.swap.record.frontDoor === undefined || result.unreachable !== undefined)
    return result;
  // The front door goes back to its normal state whatever came of it (one slot ready, the hold out): with
  // no unit up, requests are still retried on the slot's closed port for the hold's bound, never dropped.
  try {
    await release(ctx, fd, coldSlots(ctx, fd).from);
  } catch (error) {
    if (isRunOver(error)) throw error;
    if (isHostUnreachable(error)) return { ok: false, detail: describeError(error), unreachable: error };
    return {
      ok: false,
      detail: `${result.detail}; but the front door could not be put back: ${describeError(error)}`,
    };
  }
  return result;
}

async function putBack(ctx: StageContext, why: string): Promise<RollbackResult> {
  const { swap, host } = ctx;
  const plan = swap.record.plan!;
  const oldUnit = swap.record.previous!.unit;
  if (swap.record.rollbackStartedAt === undefined) {
    swap.to.rollbackBegan();
    ctx.emit({
      type: "rolling-back",
      ...(plan.host.currentUnit.exists ? { to: oldUnit } : {}),
      stopping: plan.unitName,
      why,
    });
  }
  const fd = host.frontDoor;
  // read before the hold below, which marks a release it takes back
  const unreached = neverReached(swap.record);
  try {
    // Behind a front door, new requests are held while no unit can take them, as in the switch; the new
    // unit drains first if the held requests had already been sent to it.
    // HAProxy being away must not keep the old unit from serving again: the units come first, and the
    // release after them says whether the front door could be put back.
    const held =
      fd !== undefined && swap.record.frontDoor !== undefined
        ? holdForRollback(ctx, fd).catch((error: unknown) => {
            if (passesThrough(error)) throw error;
            ctx.log.warn(
              { err: describeError(error) },
              "the rollback could not hold requests at the front door",
            );
          })
        : Promise.resolve();
    held.catch(() => undefined); // awaited below; a rejection meanwhile is not unhandled
    // A new unit clients reached drains first (the hold's wait); one none reached is stopped meanwhile,
    // the requests held since before it started (the hold asked again only in case).
    if (!unreached) await held;
    if (oldUnit !== plan.unitName) {
      // No client reached it: nothing to drain, so no graceful stop to wait out (SGLang's SIGTERM watchdog
      // polls every 5 s): killed, then stopped, in one round trip. Where sudo refuses the kill
      // (HOST_SUDO_PARTIAL), the stop drains as ever.
      const stop = unitCommands.disableNow(plan.unitName);
      await host.tryChange(unreached ? [unitCommands.killNow(plan.unitName), stop] : stop, {
        privileged: true,
        timeoutMs: stopLimitMs(plan.unitText),
      });
    }
    await held;
    // Nothing served before this swap: back to that is the new unit stopped (done above).
    if (!plan.host.currentUnit.exists)
      return { ok: true, detail: `${plan.unitName} stopped; nothing served before` };
    // The switch failed before it stopped the old unit (e.g. the unit file could not be written): it
    // still serves, and needs nothing (not even the privileges that may be what failed).
    // A park begun and never recorded (its worker died, or the switch failed inside it): the old unit's
    // memory may be released. The park finishes as a stop (never a second request), and it starts below.
    if (swap.record.switch?.parkBeganAt !== undefined && swap.record.switch.parked === undefined)
      await parkOld(ctx);
    const stillServing =
      swap.record.switch?.oldStoppedAt === undefined &&
      swap.record.switch?.parkBeganAt === undefined &&
      (await host.exec(sh`systemctl is-active ${oldUnit}`)).stdout.trim() === "active";
    // a parked old unit is woken (seconds), not started (a reload)
    if (isParked(swap.record)) await wakeParked(ctx);
    else if (!stillServing) {
      await host.change(unitCommands.enableNow(oldUnit), `starting ${oldUnit}`, { privileged: true });
    }
  } catch (error) {
    return rollbackFailed(error);
  }
  let health: Awaited<ReturnType<typeof waitHealthy>>;
  const oldHealthy = () => waitOldHealthy(ctx, oldUnit, oldUnitPort(swap.record, host.config.servingPort));
  try {
    health = await oldHealthy();
  } catch (error) {
    if (!isHostUnreachable(error)) throw error;
    return { ok: false, detail: describeError(error), unreachable: error };
  }
  // a woken model answers its sanity prompts before it takes requests again; one that fails, or that never
  // became healthy, is reloaded from disk (both do nothing for a unit that was not parked)
  let reloaded: boolean;
  try {
    reloaded = health.healthy
      ? (await checkWoken(ctx)).reloaded
      : await reloadUnhealthyWoken(ctx, health.why);
  } catch (error) {
    return rollbackFailed(error);
  }
  if (reloaded) {
    try {
      health = await oldHealthy();
    } catch (error) {
      if (!isHostUnreachable(error)) throw error;
      return { ok: false, detail: describeError(error), unreachable: error };
    }
  }
  return await settleBack(ctx, oldUnit, health, `${oldUnit} is healthy again`);
}

/** The old unit's health wait: the operator's limit when set; else at least ten minutes (the plan's is the new model's). */
export function waitOldHealthy(
  ctx: StageContext,
  unit: string,
  port: number,
): ReturnType<typeof waitHealthy> {
  const limit =
    ctx.settings.healthTimeoutSeconds ?? Math.max(600, ctx.swap.record.plan!.healthTimeoutSeconds);
  return waitHealthy({ ...ctx, engine: ctx.previousEngine }, unit, limit, undefined, undefined, port);
}

/**
 * What the old unit's health wait comes to: not healthy, a failed rollback (said in the thread, the
 * downtime open); healthy, the process the final check will expect of it noted, and the downtime closed.
 */
export async function settleBack(
  ctx: StageContext,
  unit: string,
  health: Awaited<ReturnType<typeof waitHealthy>>,
  detail: string,
): Promise<RollbackResult> {
  const { swap } = ctx;
  if (!health.healthy) {
    // no service is healthy: the downtime runs to the swap's end (swap-tally's downtimeOf), not to a
    // health the new unit had before it failed its checks
    swap.to.downtimeOpen();
    ctx.emit({
      type: "rollback-failed",
      unit,
      why: health.why,
      journal: eventLines(interestingTail(health.journal)),
    });
    return { ok: false, detail: `${unit} did not come back: ${health.why}` };
  }
  // the process the final check will expect of it (a new one after a restart)
  try {
    swap.to.verified(unit, health.mainPid || (await mainPid(ctx, unit)));
  } catch (error) {
    if (!isHostUnreachable(error)) throw error;
    return { ok: false, detail: describeError(error), unreachable: error };
  }
  // Downtime is one number everywhere: from the old unit's stop to a healthy service, here the old
  // unit again (a new unit that answered NaN served nobody).
  swap.to.downtimeUntil();
  return { ok: true, detail };
}

export type { RollbackResult };

/**
 * Whether the new unit never served a client: behind a front door that held requests from before its
 * start and never released them to it (a release a rollback took back is marked heldAgain).
 */
export function neverReached(record: StageContext["swap"]["record"]): boolean {
  const held = record.frontDoor;
  return held !== undefined && held.releasedAt === undefined && held.heldAgain !== true;
}
