import { randomBytes } from "node:crypto";
import { systemClock } from "../../src/clock.ts";
import { asCodedError, CodedError, isHostUnreachable } from "../../src/errors.ts";
import { keepRenewed } from "../../src/keep-renewed.ts";
import { inStage } from "../../src/metrics/stage-scope.ts";
import { formatGB } from "../../src/plan/byte-units.ts";
import { pastFlipBack } from "../../src/swap/flip-back.ts";
import type { StageContext, StepResult } from "../../src/swap/stage-context.ts";
import { createStageContext, type SwapDeps } from "./create-stage-context.ts";
import { benchmarkStage } from "./stages/benchmark.ts";
import { retireStage } from "./stages/blue-green.ts";
import { bytesOnDisk } from "./stages/download.ts";
import { type Finished, finishSwap } from "./stages/finish.ts";
import { releaseStage } from "./stages/front-door.ts";
import { healthStage } from "./stages/health.ts";
import { preflightStage } from "./stages/preflight.ts";
import { prepareStage, stopTasks } from "./stages/prepare.ts";
import { resolveStage } from "./stages/resolve.ts";
import { restartStage } from "./stages/restart-full-memory.ts";
import { type RollbackResult, rollback } from "./stages/rollback.ts";
import { rollbackPreflightStage } from "./stages/rollback-preflight.ts";
import { sanityStage } from "./stages/sanity.ts";
import { switchStage } from "./stages/switch.ts";
import type { RunningSwap } from "./swap-state.ts";

/** What the job runner does after one advance: nothing more, or park the job for this long. */
export type AdvanceResult = { done: true } | { done: false; waitMs: number };

/** One advance of one swap: its context, and the save that persists what its stages did. */
interface Run {
  ctx: StageContext;
  swap: RunningSwap;
  save(finished?: Finished): Promise<void>;
}

/**
 * Runs a swap forward from where its record says it is, step after step, saving the record (with its new
 * events and audit entries) after each, until it must wait (the job parks itself) or ends. A restarted
 * worker calls this again with the same record and continues; every step is idempotent. Reporting is the
 * reporter's: each save asks it to look, and nothing here waits for Slack.
 */
export async function advanceSwap(swapId: string, deps: SwapDeps): Promise<AdvanceResult> {
  const token = randomBytes(8).toString("hex");
  const leaseMs = deps.config.file.swaps.lockSeconds * 1000;
  const { locks } = deps.store;
  // Another advance of this swap is running (a step re-run while its first run still goes on): look later.
  if (!(await locks.takeLease(swapId, token, leaseMs))) return { done: false, waitMs: 1000 };
  let lost = false;
  const stopRenewing = keepRenewed(
    () => locks.renewLease(swapId, token, leaseMs),
    leaseMs / 3,
    () => {
      lost = true;
    },
  );
  try {
    const run = await openRun(swapId, deps, async () => {
      if (lost || !(await locks.holdsLease(swapId, token))) {
        throw new CodedError(
          "SWAP_SUPERSEDED",
          `swap ${swapId} is advanced by another run now; this one stops without saving`,
          "nothing to do: the run that holds the swap's lease goes on",
        );
      }
    });
    if (run === undefined) return { done: true };
    const hostLost = await ownHost(run, deps);
    if (hostLost !== undefined) return await failSwap(run, deps, hostLost, false);
    return await advanceHeld(run, deps);
  } finally {
    stopRenewing();
    await locks.releaseLease(swapId, token).catch(() => undefined);
  }
}

/**
 * Reads the record and binds it to a context whose saves are guarded by the lease (`guard` throws when
 * this advance no longer holds it, so a late process never overwrites what the one that took over wrote).
 */
async function openRun(swapId: string, deps: SwapDeps, guard: () => Promise<void>): Promise<Run | undefined> {
  const record = await deps.store.swaps.get(swapId);
  if (record === undefined || record.step === "done") return undefined;
  const { store } = deps;
  const save = async (swap: RunningSwap, finished?: Finished) => {
    await guard();
    const pending = swap.drain();
    try {
      await store.swaps.save(swap.mutable, {
        events: pending.events,
        audit: pending.audit,
        also: (tx) => {
          if (swap.record.outcome === undefined) return;
          if (finished?.serving !== undefined)
            store.hosts.setServingInTransaction(tx, swap.record.host, finished.serving);
          if (finished?.benchmark !== undefined)
            store.hosts.setLastBenchmarkInTransaction(tx, swap.record.host, finished.benchmark);
          store.locks.unlockHostInTransaction(tx, swap.record.host, swap.record.id);
        },
      });
    } catch (error) {
      swap.restore(pending);
      throw error;
    }
    // the reporter looks soon; if this ask is lost (Redis blip, a crash), its sweep finds the swap anyway
    await deps.reports
      .soon(swap.record.id, swap.record.outcome === undefined ? "routine" : "ended")
      .catch(() => undefined);
  };
  const { ctx, swap } = createStageContext(record, deps, (s) => save(s));
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
    run.ctx.log.warn({ host: record.host }, "the swap's host lock was gone; taken again");
    return undefined;
  }
  if (record.switch !== undefined) {
    run.ctx.log.error(
      { host: record.host, holder: taken.holder },
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
      if (coded.code === "SWAP_SUPERSEDED") throw error;
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
    if (!("fail" in result)) swap.set({ hostTrouble: undefined });
    if ("next" in result) {
      ctx.log.info({ step: swap.record.step, next: result.next }, "swap step done");
      swap.set({ step: result.next });
      await run.save();
      continue;
    }
    if ("wait" in result) {
      await run.save();
      return { done: false, waitMs: result.wait };
    }
    if ("end" in result) {
      await run.save(await finishSwap(ctx, result.end, result.reason));
      return { done: true };
    }
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
  const token = randomBytes(8).toString("hex");
  const leaseMs = deps.config.file.swaps.lockSeconds * 1000;
  const { locks } = deps.store;
  const held = await locks.takeLease(swapId, token, leaseMs).catch(() => false);
  const stopRenewing = held
    ? keepRenewed(() => locks.renewLease(swapId, token, leaseMs), leaseMs / 3)
    : () => {};
  try {
    const run = await openRun(swapId, deps, async () => undefined);
    if (run === undefined) return;
    const { record } = run.swap;
    await failSwap(run, deps, record.reason ?? why, record.switch !== undefined, { retry: false });
  } finally {
    stopRenewing();
    if (held) await locks.releaseLease(swapId, token).catch(() => undefined);
  }
}

/** Notes one more failed try to reach the host; the backoff before the next, or undefined once out of time. */
function retryLater(run: Run, deps: SwapDeps, error: unknown): number | undefined {
  const { swap } = run;
  const now = (deps.clock ?? systemClock).now();
  const before = swap.record.hostTrouble ?? { since: new Date(now).toISOString(), tries: 0, last: "" };
  const trouble = { ...before, tries: before.tries + 1, last: asCodedError(error).message };
  swap.set({ hostTrouble: trouble });
  const limitMs = deps.config.file.swaps.hostRetrySeconds * 1000;
  const elapsed = now - Date.parse(trouble.since);
  if (elapsed >= limitMs) return undefined;
  run.ctx.log.warn(
    { tries: trouble.tries, elapsedMs: elapsed, step: swap.record.step },
    "host unreachable; retrying",
  );
  return Math.min(1000 * 2 ** (trouble.tries - 1), 15_000, Math.max(200, limitMs - elapsed));
}

function gaveUp(run: Run, deps: SwapDeps, error: unknown): string {
  const { record } = run.swap;
  const now = (deps.clock ?? systemClock).now();
  const trouble = record.hostTrouble;
  const seconds = trouble === undefined ? 0 : Math.round((now - Date.parse(trouble.since)) / 1000);
  const coded = asCodedError(error);
  return `${record.host} could not be reached for ${seconds} s (${trouble?.tries ?? 1} tries; swaps.hostRetrySeconds is ${deps.config.file.swaps.hostRetrySeconds}): ${coded.message} (${coded.code}). Fix: ${coded.fix}`;
}

async function runStep(ctx: StageContext): Promise<StepResult> {
  const { record } = ctx.swap;
  switch (record.step) {
    case "resolve":
      return await resolveStage(ctx);
    case "preflight":
      return record.rollbackTo === undefined ? await preflightStage(ctx) : await rollbackPreflightStage(ctx);
    case "prepare":
      return await prepareStage(ctx);
    case "switch":
      return await switchStage(ctx);
    case "health":
      return await healthStage(ctx);
    case "sanity":
      return await sanityStage(ctx);
    case "release":
      return await releaseStage(ctx);
    case "benchmark":
      return await benchmarkStage(ctx);
    case "retire":
      return await retireStage(ctx);
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

/**
 * A cancel request ends the swap at the next step: before the switch the detached tasks are stopped and
 * the files kept (the card says where and how much); from the switch on, the old service is put back.
 */
async function cancelled(run: Run): Promise<StepResult | undefined> {
  const { ctx, swap } = run;
  const request = await ctx.gate.cancelRequest();
  if (request === undefined || swap.record.step === "rollback") return undefined;
  // a blue/green swap whose old unit is already stopping: nothing to flip back to, the swap ends as it is
  if (pastFlipBack(swap.record)) return undefined;
  if (swap.record.cancel === undefined) {
    swap.set({ cancel: request });
    swap.audit(
      "cancel",
      swap.record.switch === undefined ? "cancelled before the switch" : "cancelled after the switch",
      request.by,
    );
  }
  if (swap.record.switch === undefined) {
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
  swap.set({ reason: "cancelled after the switch", step: "rollback" });
  await run.save();
  const result = await rollback(ctx, "cancelled after the switch");
  if (result.unreachable !== undefined) throw result.unreachable; // retried like any step; then rolled back
  swap.set({ rollback: { ok: result.ok, detail: result.detail } });
  return result.ok
    ? { end: "cancelled", reason: rolledBackBecauseCancelled(result.detail) }
    : { end: "failed", reason: "cancelled after the switch" };
}

/** A cancelled swap's reason once its rollback has put the old service back. */
function rolledBackBecauseCancelled(detail: string): string {
  return `after the switch, so it was rolled back: ${detail}`;
}

/**
 * A failure: before the switch nothing changed; from the switch on, the old service is put back. A
 * rollback that cannot reach the host is tried again (for swaps.hostRetrySeconds) unless `retry` is off.
 */
async function failSwap(
  run: Run,
  deps: SwapDeps,
  why: string,
  touched: boolean,
  options: { retry: boolean } = { retry: true },
): Promise<AdvanceResult> {
  const { ctx, swap } = run;
  swap.set({ reason: why });
  if (!touched || swap.record.switch === undefined) {
    await run.save(await finishSwap(ctx, "failed", why));
    return { done: true };
  }
  if (swap.record.step !== "rollback") {
    // the rollback gets its own time to reach the host
    swap.set({ step: "rollback", hostTrouble: undefined });
    await run.save();
  }
  let result: RollbackResult;
  try {
    result = await rollback(ctx, why);
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
  swap.set({ rollback: { ok: result.ok, detail: result.detail } });
  if (result.ok && swap.record.cancel !== undefined) {
    // a cancel's rollback that a new worker finished (the first died inside it): cancelled, as it would
    // have ended had the first lived
    await run.save(await finishSwap(ctx, "cancelled", rolledBackBecauseCancelled(result.detail)));
    return { done: true };
  }
  // a blue/green swap that failed before its flip changed nothing production saw: failed, not rolled back
  const outcome = result.ok && result.nothingToUndo !== true ? "rolled_back" : "failed";
  await run.save(await finishSwap(ctx, outcome, why));
  return { done: true };
}
