import { randomBytes } from "node:crypto";
import { asCodedError, CodedError, describeError, isHostUnreachable } from "../../src/errors.ts";
import { formatGB } from "../../src/plan/byte-units.ts";
import { benchmarkStage } from "./stages/benchmark.ts";
import { finishSwap } from "./stages/finish.ts";
import { healthStage } from "./stages/health.ts";
import { preflightStage } from "./stages/preflight.ts";
import { bytesOnDisk, prepareStage, stopTasks, updatePlanMessage } from "./stages/prepare.ts";
import { resolveStage } from "./stages/resolve.ts";
import { type RollbackResult, rollback } from "./stages/rollback.ts";
import { rollbackPreflightStage } from "./stages/rollback-preflight.ts";
import { sanityStage } from "./stages/sanity.ts";
import { switchStage } from "./stages/switch.ts";
import type { StepResult } from "./step-result.ts";
import { createStageContext, type StageContext, type SwapDeps } from "./swap-context.ts";

/** What the job runner does after one advance: nothing more, or park the job for this long. */
export type AdvanceResult = { done: true } | { done: false; waitMs: number };

/**
 * Runs a swap forward from where its record says it is, step after step, saving the record after each,
 * until it must wait (the job parks itself) or ends. A restarted worker calls this again with the same
 * record and continues; every step is idempotent.
 */
export async function advanceSwap(swapId: string, deps: SwapDeps): Promise<AdvanceResult> {
  const token = randomBytes(8).toString("hex");
  const leaseMs = deps.config.file.swaps.lockSeconds * 1000;
  // Another advance of this swap is running (a step re-run while its first run still goes on): look later.
  if (!(await deps.store.takeLease(swapId, token, leaseMs))) return { done: false, waitMs: 1000 };
  let lost = false;
  const renew = setInterval(() => {
    deps.store.renewLease(swapId, token, leaseMs).then(
      (held) => {
        if (!held) lost = true;
      },
      () => undefined, // Redis away: the next save finds out
    );
  }, leaseMs / 3);
  renew.unref();
  try {
    return await advanceHeld(swapId, deps, async () => {
      if (lost || !(await deps.store.holdsLease(swapId, token))) {
        throw new CodedError(
          "SWAP_SUPERSEDED",
          `swap ${swapId} is advanced by another run now; this one stops without saving`,
          "nothing to do: the run that holds the swap's lease goes on",
        );
      }
    });
  } finally {
    clearInterval(renew);
    await deps.store.releaseLease(swapId, token).catch(() => undefined);
  }
}

async function advanceHeld(
  swapId: string,
  deps: SwapDeps,
  guard: () => Promise<void>,
): Promise<AdvanceResult> {
  const record = await deps.store.get(swapId);
  if (record === undefined || record.step === "done") return { done: true };
  const ctx = createStageContext(record, deps, guard);
  for (;;) {
    let result: StepResult;
    if (deps.stopping?.aborted) {
      // A safe point: the record is saved, so another worker (or this one, restarted) goes on from here.
      await ctx.save();
      return { done: false, waitMs: 0 };
    }
    try {
      result = (await cancelled(ctx)) ?? (await runStep(ctx));
    } catch (error) {
      const coded = asCodedError(error);
      if (coded.code === "SWAP_SUPERSEDED") throw error;
      if (coded.code === "SHUTTING_DOWN") {
        ctx.log.info({ step: record.step }, "stopping: the step is handed over");
        await ctx.save();
        return { done: false, waitMs: 0 };
      }
      ctx.log.error({ err: coded, step: record.step }, "swap step threw");
      if (!isHostUnreachable(error)) {
        result = { fail: describeError(error), touched: record.switch !== undefined };
      } else {
        // The host is away (sshd restarting, network cut, reboot): the same step runs again later.
        const waitMs = retryLater(ctx, error);
        if (waitMs !== undefined) {
          await ctx.save();
          return { done: false, waitMs };
        }
        result = { fail: gaveUp(ctx, error), touched: record.switch !== undefined };
      }
    }
    if (!("fail" in result)) record.hostTrouble = undefined;
    if ("next" in result) {
      ctx.log.info({ step: record.step, next: result.next }, "swap step done");
      record.step = result.next;
      await ctx.save();
      continue;
    }
    if ("wait" in result) {
      await ctx.save();
      return { done: false, waitMs: result.wait };
    }
    if ("end" in result) {
      await finishSwap(ctx, result.end, result.reason);
      return { done: true };
    }
    return await failSwap(ctx, result.fail, result.touched);
  }
}

/**
 * A swap whose job can no longer run (its attempts are spent): it ends as failed, after a rollback when
 * the switch had begun. Called by the worker when BullMQ gives the job up.
 */
export async function abandonSwap(swapId: string, why: string, deps: SwapDeps): Promise<void> {
  const record = await deps.store.get(swapId);
  if (record === undefined || record.step === "done") return;
  const ctx = createStageContext(record, deps);
  await failSwap(ctx, record.reason ?? why, record.switch !== undefined, { retry: false });
}

/** Notes one more failed try to reach the host; the backoff before the next, or undefined once out of time. */
function retryLater(ctx: StageContext, error: unknown): number | undefined {
  const { record } = ctx;
  const now = Date.now();
  const trouble = record.hostTrouble ?? { since: new Date(now).toISOString(), tries: 0, last: "" };
  trouble.tries += 1;
  trouble.last = asCodedError(error).message;
  record.hostTrouble = trouble;
  const limitMs = ctx.deps.config.file.swaps.hostRetrySeconds * 1000;
  const elapsed = now - Date.parse(trouble.since);
  if (elapsed >= limitMs) return undefined;
  ctx.log.warn({ tries: trouble.tries, elapsedMs: elapsed, step: record.step }, "host unreachable; retrying");
  return Math.min(1000 * 2 ** (trouble.tries - 1), 15_000, Math.max(200, limitMs - elapsed));
}

function gaveUp(ctx: StageContext, error: unknown): string {
  const { record } = ctx;
  const trouble = record.hostTrouble;
  const seconds = trouble === undefined ? 0 : Math.round((Date.now() - Date.parse(trouble.since)) / 1000);
  const coded = asCodedError(error);
  return `${record.host} could not be reached for ${seconds} s (${trouble?.tries ?? 1} tries; swaps.hostRetrySeconds is ${ctx.deps.config.file.swaps.hostRetrySeconds}): ${coded.message} (${coded.code}). Fix: ${coded.fix}`;
}

async function runStep(ctx: StageContext): Promise<StepResult> {
  switch (ctx.record.step) {
    case "resolve":
      return await resolveStage(ctx);
    case "preflight":
      return ctx.record.rollbackTo === undefined
        ? await preflightStage(ctx)
        : await rollbackPreflightStage(ctx);
    case "prepare":
      return await prepareStage(ctx);
    case "switch":
      return await switchStage(ctx);
    case "health":
      return await healthStage(ctx);
    case "sanity":
      return await sanityStage(ctx);
    case "benchmark":
      return await benchmarkStage(ctx);
    case "finish":
      return { end: "succeeded" };
    case "rollback":
      return { fail: ctx.record.reason ?? "rollback after a crash", touched: true };
    case "done":
      return { end: ctx.record.outcome ?? "failed" };
  }
}

/**
 * A cancel request ends the swap at the next step: before the switch the detached tasks are stopped and
 * the files kept (the card says where and how much); from the switch on, the old service is put back.
 */
async function cancelled(ctx: StageContext): Promise<StepResult | undefined> {
  const request = await ctx.deps.store.cancelRequest(ctx.record.id);
  if (request === undefined || ctx.record.step === "rollback") return undefined;
  const { record } = ctx;
  ctx.audit(
    "cancel",
    record.switch === undefined ? "cancelled before the switch" : "cancelled after the switch",
    request.by,
  );
  if (record.switch === undefined) {
    await stopTasks(ctx);
    if (record.stages.approval.state === "running") ctx.stage("approval", "skipped", "cancelled");
    await updatePlanMessage(ctx, "cancelled", request.by);
    const dir = record.plan?.modelDir;
    const kept =
      dir === undefined
        ? ""
        : `; downloaded files are kept in ${dir} (${formatGB(await bytesOnDisk(ctx, dir))})`;
    return { end: "cancelled", reason: `cancelled by <@${request.by}>${kept}` };
  }
  record.reason = `cancelled by <@${request.by}> after the switch`;
  record.step = "rollback";
  await ctx.save();
  const result = await rollback(ctx, record.reason);
  if (result.unreachable !== undefined) throw result.unreachable; // retried like any step; then rolled back
  record.rollback = { ok: result.ok, detail: result.detail };
  return result.ok
    ? { end: "cancelled", reason: `${record.reason}; ${result.detail}` }
    : { end: "failed", reason: record.reason };
}

/**
 * A failure: before the switch nothing changed; from the switch on, the old service is put back. A
 * rollback that cannot reach the host is tried again (for swaps.hostRetrySeconds) unless `retry` is off.
 */
async function failSwap(
  ctx: StageContext,
  why: string,
  touched: boolean,
  options: { retry: boolean } = { retry: true },
): Promise<AdvanceResult> {
  const { record } = ctx;
  record.reason = why;
  if (!touched || record.switch === undefined) {
    await finishSwap(ctx, "failed", why);
    return { done: true };
  }
  if (record.step !== "rollback") {
    record.step = "rollback";
    record.hostTrouble = undefined; // the rollback gets its own time to reach the host
    await ctx.save();
  }
  await ctx.updateCard(true);
  let result: RollbackResult;
  try {
    result = await rollback(ctx, why);
  } catch (error) {
    if (asCodedError(error).code !== "SHUTTING_DOWN") throw error;
    await ctx.save(); // at step "rollback": the next worker rolls back again (each command is idempotent)
    return { done: false, waitMs: 0 };
  }
  if (result.ok) record.hostTrouble = undefined;
  else if (result.unreachable !== undefined && options.retry) {
    const waitMs = retryLater(ctx, result.unreachable);
    if (waitMs !== undefined) {
      await ctx.save();
      return { done: false, waitMs };
    }
    result.detail = gaveUp(ctx, result.unreachable);
  }
  record.rollback = { ok: result.ok, detail: result.detail };
  await finishSwap(ctx, result.ok ? "rolled_back" : "failed", why);
  return { done: true };
}
