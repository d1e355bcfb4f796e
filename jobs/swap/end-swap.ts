import { isoNow } from "../../src/clock.ts";
import { asCodedError, isHostUnreachable } from "../../src/errors.ts";
import { formatGB } from "../../src/plan/byte-units.ts";
import { pastFlipBack } from "../../src/swap/flip-back.ts";
import type { StageContext, StepResult } from "../../src/swap/stage-context.ts";
import type { SwapOutcome } from "../../src/swap/swap-record.ts";
import type { SwapDeps } from "./create-stage-context.ts";
import { modeOf } from "./modes/mode-of.ts";
import type { SwapMode } from "./modes/swap-mode.ts";
import { gaveUp, type Run, retryLater } from "./run.ts";
import { bytesOnDisk } from "./stages/download.ts";
import { type Expected, type FinalCheck, finalCheck } from "./stages/final-check.ts";
import { finishSwap } from "./stages/finish.ts";
import { leavePeers } from "./stages/peer-copy.ts";
import { stopTasks } from "./stages/prepare.ts";
import { reclaimAfterSwap } from "./stages/reclaim.ts";
import type { RollbackResult } from "./stages/rollback-result.ts";

/** What the job runner does after one advance: nothing more, or park the job for this long. */
export type AdvanceResult = { done: true } | { done: false; waitMs: number };

/*
 * How a swap ends: a failure undone by its mode (a rollback), a cancel, and, for every outcome that
 * touched the host, the last check of what serves before the outcome is written (issue 27 §1). The
 * outcome says what that check saw, never what a step meant to do.
 */

/**
 * Ends the swap with `outcome` once the final check agrees: the unit the outcome names must serve as a
 * client sees it. A success it contradicts is a failure (and rolled back); a rollback or cancel whose old
 * unit does not serve ends as failed, paging the channel; a failed rollback whose old unit serves after all
 * is a rollback. An untouched host (the switch never began) is not checked: its outcome names no unit.
 */
export async function conclude(
  run: Run,
  deps: SwapDeps,
  intended: SwapOutcome,
  reason?: string,
): Promise<AdvanceResult> {
  const { ctx, swap } = run;
  const mode = modeOf(swap.record.plan);
  let outcome = intended;
  const expected = expectationFor(ctx, mode, outcome);
  if (expected !== undefined) {
    let seen: FinalCheck;
    try {
      seen = await finalCheck(ctx, expected);
      if (!seen.ok && outcome === "failed") seen = await otherServes(ctx, mode, seen);
    } catch (error) {
      if (!isHostUnreachable(error)) throw error;
      const waitMs = retryLater(run, deps, error);
      if (waitMs !== undefined) {
        await run.save(); // the step runs again, and so does this check
        return { done: false, waitMs };
      }
      seen = {
        at: isoNow(ctx.clock),
        unit: expected.unit,
        ok: false,
        mainPid: 0,
        detail: `nothing could be checked: ${gaveUp(run, deps, error)}`,
      };
    }
    swap.to.checked(seen);
    swap.set({ hostTrouble: undefined });
    if (!seen.ok && outcome === "succeeded") {
      swap.set({
        failure: {
          code: "HEALTH_FAILED",
          fix: `the journal of ${seen.unit} (journalctl -u ${seen.unit}) says why it stopped serving after its checks`,
        },
      });
      return await failSwap(run, deps, `the last check before the end found: ${seen.detail}`, true);
    }
    if (!seen.ok && (outcome === "rolled_back" || outcome === "cancelled")) {
      swap.to.rolledBack(false, `the last check after it found: ${seen.detail}`);
      outcome = "failed";
    } else if (seen.ok && outcome === "failed" && swap.record.rollback?.ok === false) {
      if (seen.unit === swap.record.previous?.unit)
        // what the rollback could not see through, the check did: the old unit serves
        swap.to.rolledBack(true, `${seen.unit} serves again`);
      outcome = seen.unit === swap.record.previous?.unit ? "rolled_back" : "failed";
    }
  }
  // in a rollout, its peers copy from it no more (peer-copy.ts)
  await leavePeers(ctx);
  // its flip-back window is over and the outcome checked: what retention lets go, under the swap's fence
  await reclaimAfterSwap(ctx, deps.config.current().file.retention, outcome);
  await run.save(await finishSwap(ctx, outcome, reason));
  return { done: true };
}

/**
 * The unit an outcome names, as the final check expects it: the new one for a success (and for a swap
 * that failed after its old unit stopped for good: it is what is left), the old one for anything undone.
 * None for a host the swap never touched, or one where nothing served before.
 */
function expectationFor(ctx: StageContext, mode: SwapMode, outcome: SwapOutcome): Expected | undefined {
  const { record } = ctx.swap;
  if (record.switch === undefined || record.plan === undefined) return undefined;
  if (outcome === "succeeded") return mode.newUnit(ctx);
  if (record.flip?.retiredAt !== undefined && record.rollback === undefined) return mode.newUnit(ctx);
  if (!record.plan.host.currentUnit.exists) return undefined;
  return mode.oldUnit(ctx);
}

/**
 * A failed swap whose old unit does not serve: does the new one? (A rollback that could not go back left
 * it.) Its check when it does; else the old unit's.
 */
async function otherServes(ctx: StageContext, mode: SwapMode, old: FinalCheck): Promise<FinalCheck> {
  const { record } = ctx.swap;
  if (record.switch?.newStartedAt === undefined || old.unit !== record.previous?.unit) return old;
  const other = await finalCheck(ctx, mode.newUnit(ctx));
  return other.ok ? other : old;
}

/**
 * A failure: before the switch nothing changed; from the switch on, the swap's mode puts back what served
 * before, and the final check says whether it serves. A rollback that cannot reach the host is tried
 * again (for swaps.hostRetrySeconds) unless `retry` is off.
 */
export async function failSwap(
  run: Run,
  deps: SwapDeps,
  why: string,
  touched: boolean,
  options: { retry: boolean } = { retry: true },
): Promise<AdvanceResult> {
  const { ctx, swap } = run;
  swap.set({ reason: why });
  if (!touched || swap.record.switch === undefined) return await conclude(run, deps, "failed", why);
  if (swap.record.step !== "rollback") {
    // the rollback gets its own time to reach the host
    swap.to.stepTo("rollback");
    swap.set({ hostTrouble: undefined });
    await run.save();
  }
  let result: RollbackResult;
  try {
    result = await modeOf(swap.record.plan).undo(ctx, why);
  } catch (error) {
    if (asCodedError(error).code !== "SHUTTING_DOWN") throw error;
    await run.save(); // at step "rollback": the next worker rolls back again (each command is idempotent)
    return { done: false, waitMs: 0 };
  }
  if (result.ok) swap.set({ hostTrouble: undefined });
  else if (result.unreachable !== undefined && options.retry) {
    const waitMs = retryLater(run, deps, result.unreachable);
    if (waitMs !== undefined) {
      await run.save();
      return { done: false, waitMs };
    }
    result.detail = gaveUp(run, deps, result.unreachable);
  }
  swap.to.rolledBack(result.ok, result.detail);
  if (result.ok && swap.record.cancel !== undefined) {
    // a cancel's rollback (a new worker may have finished it, the first having died inside it)
    return await conclude(run, deps, "cancelled", rolledBackBecauseCancelled(result.detail));
  }
  // a blue/green swap that failed before its flip changed nothing production saw: failed, not rolled back
  const outcome = result.ok && result.nothingToUndo !== true ? "rolled_back" : "failed";
  return await conclude(run, deps, outcome, why);
}

/**
 * A cancel request ends the swap at the next step: before the switch the detached tasks are stopped and
 * the files kept (the card says where and how much); from the switch on, the old service is put back (a
 * failure of the swap's own: failSwap). A blue/green swap in its flip-back window flips back only to an
 * old unit that still serves: one that died there is not flipped back to, the cancel is refused and
 * said, and the swap goes on.
 */
export async function cancelled(run: Run): Promise<StepResult | undefined> {
  const { ctx, swap } = run;
  if (swap.record.cancel?.refused !== undefined) return undefined;
  const request = await ctx.gate.cancelRequest();
  if (request === undefined || swap.record.step === "rollback") return undefined;
  // a blue/green swap whose old unit is already stopping: nothing to flip back to, the swap ends as it is
  if (pastFlipBack(swap.record)) return undefined;
  const first = swap.record.cancel === undefined;
  if (first) swap.to.cancelTaken(request);
  if (swap.record.switch === undefined) {
    if (first) swap.audit("cancel", "cancelled before the switch", request.by);
    await stopTasks(ctx);
    if (swap.record.stages.approval.state === "running") {
      swap.stage("approval", "skipped", "cancelled");
      if (swap.record.planHash !== undefined)
        ctx.emit({
          type: "approval-closed",
          planHash: swap.record.planHash,
          why: "cancelled",
          by: request.by,
        });
    }
    const dir = swap.record.plan?.modelDir;
    const kept =
      dir === undefined
        ? undefined
        : `downloaded files are kept in ${dir} (${formatGB(await bytesOnDisk(ctx, dir))})`;
    return { end: "cancelled", ...(kept === undefined ? {} : { reason: kept }) };
  }
  if (swap.record.flip !== undefined && swap.record.flip.flippedBackAt === undefined) {
    const old = modeOf(swap.record.plan).oldUnit(ctx);
    const seen = await finalCheck(ctx, { ...old, slot: undefined }, { direct: true });
    if (!seen.ok) {
      swap.to.cancelRefused(seen.detail);
      swap.audit(
        "cancel",
        `cancel not carried out: ${old.unit} no longer serves (${seen.detail})`,
        request.by,
      );
      ctx.emit({
        type: "flip-back-refused",
        unit: old.unit,
        serving: swap.record.plan!.unitName,
        why: seen.detail,
      });
      return undefined;
    }
  }
  if (first) swap.audit("cancel", "cancelled after the switch", request.by);
  return { fail: "cancelled after the switch", touched: true };
}

/** A cancelled swap's reason once its rollback has put the old service back. */
function rolledBackBecauseCancelled(detail: string): string {
  return `after the switch, so it was rolled back: ${detail}`;
}
