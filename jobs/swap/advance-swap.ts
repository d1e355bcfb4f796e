import { systemClock } from "../../src/clock.ts";
import { asCodedError, isHostUnreachable, isRunOver } from "../../src/errors.ts";
import { inStage } from "../../src/metrics/stage-scope.ts";
import type { StageContext, StepResult } from "../../src/swap/stage-context.ts";
import { createStageContext, type SwapDeps } from "./create-stage-context.ts";
import { type AdvanceResult, cancelled, conclude, failSwap } from "./end-swap.ts";
import { modeOf } from "./modes/mode-of.ts";
import { gaveUp, type Run, retryLater } from "./run.ts";
import { runSave } from "./run-save.ts";
import { benchmarkStage } from "./stages/benchmark.ts";
import { healthStage } from "./stages/health.ts";
import { preflightStage } from "./stages/preflight.ts";
import { prepareStage } from "./stages/prepare.ts";
import { resolveStage } from "./stages/resolve.ts";
import { restartStage } from "./stages/restart-full-memory.ts";
import { rollbackPreflightStage } from "./stages/rollback-preflight.ts";
import { sanityStage } from "./stages/sanity.ts";
import { type SwapLease, takeSwapLease } from "./swap-lease.ts";

export type { AdvanceResult };

/**
 * Runs a swap forward from where its record says it is, step after step, saving the record (with its new
 * events and audit entries) after each, until it must wait (the job parks itself) or ends. A restarted
 * worker calls this again with the same record and continues; every step is idempotent. Reporting is the
 * reporter's: each save asks it to look, and nothing here waits for Slack.
 */
export async function advanceSwap(swapId: string, deps: SwapDeps): Promise<AdvanceResult> {
  const leaseMs = deps.config.current().file.swaps.lockSeconds * 1000;
  const lease = await takeSwapLease(deps.store.locks, swapId, leaseMs);
  // Another advance of this swap is running (a step re-run while its first run still goes on): look later.
  if (lease === undefined) return { done: false, waitMs: 1000 };
  try {
    const run = await openRun(swapId, deps, lease);
    if (run === undefined) return { done: true };
    const hostLost = await ownHost(run, deps);
    if (hostLost !== undefined) return await failSwap(run, deps, hostLost, false);
    return await advanceHeld(run, deps);
  } catch (error) {
    if (isRunOver(error)) {
      const { code, message } = asCodedError(error);
      deps.log.warn({ swap: swapId, code }, `this run of the swap stops, nothing saved: ${message}`);
      // ended from outside meanwhile (a stuck swap cleared): nothing is left for its job to do
      if (code === "SWAP_ENDED") return { done: true };
    }
    throw error;
  } finally {
    await lease.release();
  }
}

/**
 * Reads the record and binds it to a context whose saves are guarded by the lease (Redis refuses a save
 * once this advance no longer holds it, so a late process never overwrites what the one that took over
 * wrote: jobs/swap/run-save.ts) and whose changes to the host carry the lease's fence number (so the host
 * refuses them then).
 */
async function openRun(swapId: string, deps: SwapDeps, lease: SwapLease): Promise<Run | undefined> {
  const record = await deps.store.swaps.get(swapId);
  if (record === undefined || record.step === "done") return undefined;
  const { store } = deps;
  // a reload's new settings for this host that waited for the swap before this one: in place before it reads the host
  await deps.hosts.settle((host) => store.locks.hostHolder(host), record.host);
  const save = runSave(deps, lease);
  const { ctx, swap } = createStageContext(record, deps, (s) => save(s), lease.fence);
  return { ctx, swap, save: (finished) => save(swap, finished) };
}

/**
 * A swap advances only while it holds its host's lock. It can be without it only when its request stalled
 * between taking the lock and queueing the job for longer than the grace after which a lock with no job
 * is judged stuck (src/store/host-lock-check.ts), and the lock was cleared meanwhile. Then it takes the
 * host again if it is free. If another swap holds it, a swap that has not switched fails (nothing was
 * touched); one that has goes on, since leaving the host half-switched would be worse. The reason to fail
 * with, or undefined to go on.
 */
async function ownHost(run: Run, deps: SwapDeps): Promise<string | undefined> {
  const { record } = run.swap;
  if (record.request.dryRun) return undefined;
  const { locks } = deps.store;
  if ((await locks.hostHolder(record.host)) === record.id) return undefined;
  const taken = await locks.lockHost(record.host, record.id);
  if (taken.ok) {
    run.ctx.log.warn("the swap's host lock was gone; taken again");
    return undefined;
  }
  if (record.switch !== undefined) {
    run.ctx.log.error(
      { holder: taken.holder },
      "the host is locked by another swap after this one's switch; going on",
    );
    return undefined;
  }
  return `${record.host} is locked by swap ${taken.holder}: this swap lost its host lock (it was queued long after taking it, and the lock was cleared as stuck meanwhile); nothing was changed on the host. Swap again once ${taken.holder} has ended`;
}

async function advanceHeld(run: Run, deps: SwapDeps): Promise<AdvanceResult> {
  const { ctx, swap } = run;
  for (;;) {
    let result: StepResult;
    if (deps.stopping?.aborted) {
      // A safe point: the record is saved, so another worker (or this one, restarted) goes on from here.
      await run.save();
      return { done: false, waitMs: 0 };
    }
    try {
      result = (await cancelled(run)) ?? (await inStage(swap.record.step, () => runStep(ctx)));
    } catch (error) {
      const coded = asCodedError(error);
      if (isRunOver(error)) throw error;
      if (coded.code === "SHUTTING_DOWN") {
        ctx.log.info({ step: swap.record.step }, "stopping: the step is handed over");
        await run.save();
        return { done: false, waitMs: 0 };
      }
      ctx.log.error({ err: coded, step: swap.record.step }, "swap step threw");
      if (!isHostUnreachable(error)) {
        result = {
          fail: coded.message,
          code: coded.code,
          fix: coded.fix,
          touched: swap.record.switch !== undefined,
        };
      } else {
        // The host is away (sshd restarting, network cut, reboot): the same step runs again later.
        const waitMs = retryLater(run, deps, error);
        if (waitMs !== undefined) {
          await run.save();
          return { done: false, waitMs };
        }
        result = { fail: gaveUp(run, deps, error), touched: swap.record.switch !== undefined };
      }
    }
    // a step that got through to the host ends the host's trouble; one that ends the swap does not yet:
    // the conclusion's last check must get through (end-swap.ts), and it is what the trouble counts
    if ("next" in result || "wait" in result) swap.set({ hostTrouble: undefined });
    if ("next" in result) {
      ctx.log.info({ step: swap.record.step, next: result.next }, "swap step done");
      swap.to.stepTo(result.next);
      await run.save();
      continue;
    }
    if ("wait" in result) {
      await run.save();
      return { done: false, waitMs: result.wait };
    }
    if ("end" in result) return await conclude(run, deps, result.end, result.reason);
    if (result.code !== undefined && result.fix !== undefined) {
      swap.set({ failure: { code: result.code, fix: result.fix } });
    }
    return await failSwap(run, deps, result.fail, result.touched);
  }
}

/**
 * A swap whose job can no longer run (its attempts are spent): it ends as failed, after a rollback when
 * the switch had begun. Called by the worker when BullMQ gives the job up.
 */
export async function abandonSwap(swapId: string, why: string, deps: SwapDeps): Promise<void> {
  // Its job is failed now, so only the lease tells that this swap is still being ended (its rollback may
  // take minutes): held, it keeps the host lock from being judged stuck (src/store/host-lock-check.ts).
  // Held by another run (one still going, whose job was given up under it), it is waited for: that run
  // saves and ends, or dies and lets the lease lapse. Without it, nothing here touches the record or host.
  const leaseMs = deps.config.current().file.swaps.lockSeconds * 1000;
  const clock = deps.clock ?? systemClock;
  const until = clock.now() + leaseMs + 1000;
  let lease: SwapLease | undefined;
  for (;;) {
    lease = await takeSwapLease(deps.store.locks, swapId, leaseMs).catch(() => undefined);
    if (lease !== undefined || clock.now() >= until) break;
    await clock.sleep(500);
  }
  if (lease === undefined) {
    deps.log.warn({ swap: swapId }, "a failed swap's lease stays held by another run: that run ends it");
    return;
  }
  try {
    const run = await openRun(swapId, deps, lease);
    if (run === undefined) return;
    const { record } = run.swap;
    await failSwap(run, deps, record.reason ?? why, record.switch !== undefined, { retry: false });
  } catch (error) {
    if (!isRunOver(error)) throw error;
    const { code, message } = asCodedError(error);
    deps.log.warn({ swap: swapId, code }, `this run of the swap stops, nothing saved: ${message}`);
  } finally {
    await lease.release();
  }
}

/** Runs the step the record is at: the generic stages, and the swap's mode for what differs by mode. */
async function runStep(ctx: StageContext): Promise<StepResult> {
  const { record } = ctx.swap;
  const mode = modeOf(record.plan);
  switch (record.step) {
    case "resolve":
      return await resolveStage(ctx);
    case "preflight":
      return record.rollbackTo === undefined ? await preflightStage(ctx) : await rollbackPreflightStage(ctx);
    case "prepare":
      return await prepareStage(ctx);
    case "switch":
      return await mode.start(ctx);
    case "health":
      return await healthStage(ctx);
    case "sanity":
      return await sanityStage(ctx, mode.after(record, "sanity"));
    case "release":
      return await mode.takeRequests(ctx);
    case "benchmark":
      return await benchmarkStage(ctx, {
        next: mode.after(record, "benchmark"),
        when: mode.benchmarkWhen(record),
      });
    case "retire":
      return await mode.retire(ctx);
    case "restart":
      return await restartStage(ctx);
    case "finish":
      return { end: "succeeded" };
    case "rollback":
      return { fail: record.reason ?? "rollback after a crash", touched: true };
    case "done":
      return { end: record.outcome ?? "failed" };
  }
}
