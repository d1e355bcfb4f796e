import { asCodedError, describeError } from "../../src/errors.ts";
import { formatGB } from "../../src/plan/byte-units.ts";
import { benchmarkStage } from "./stages/benchmark.ts";
import { finishSwap } from "./stages/finish.ts";
import { healthStage } from "./stages/health.ts";
import { preflightStage } from "./stages/preflight.ts";
import { bytesOnDisk, prepareStage, stopTasks, updatePlanMessage } from "./stages/prepare.ts";
import { resolveStage } from "./stages/resolve.ts";
import { rollback } from "./stages/rollback.ts";
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
export async function advanceSwap(
  swapId: string,
  deps: SwapDeps,
  finalAttempt = true,
): Promise<AdvanceResult> {
  const record = await deps.store.get(swapId);
  if (record === undefined || record.step === "done") return { done: true };
  const ctx = createStageContext(record, deps);
  for (;;) {
    let result: StepResult;
    try {
      result = (await cancelled(ctx)) ?? (await runStep(ctx));
    } catch (error) {
      const coded = asCodedError(error);
      ctx.log.error({ err: coded, step: record.step }, "swap step threw");
      // Connection problems are retried by the job's attempts; anything else fails the swap.
      const transient =
        coded.code === "HOST_UNREACHABLE" ||
        coded.code === "HOST_CONNECTION_LOST" ||
        coded.code === "HOST_COMMAND_TIMEOUT";
      if (transient && !finalAttempt) {
        await ctx.save();
        throw error;
      }
      result = { fail: describeError(error), touched: record.switch !== undefined };
    }
    if ("next" in result) {
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
    await failSwap(ctx, result.fail, result.touched);
    return { done: true };
  }
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
  record.rollback = result;
  return result.ok
    ? { end: "cancelled", reason: `${record.reason}; ${result.detail}` }
    : { end: "failed", reason: record.reason };
}

/** A failure: before the switch nothing changed; from the switch on, the old service is put back. */
async function failSwap(ctx: StageContext, why: string, touched: boolean): Promise<void> {
  const { record } = ctx;
  record.reason = why;
  if (!touched || record.switch === undefined) {
    await finishSwap(ctx, "failed", why);
    return;
  }
  record.step = "rollback";
  await ctx.save();
  await ctx.updateCard(true);
  const result = await rollback(ctx, why);
  record.rollback = result;
  await finishSwap(ctx, result.ok ? "rolled_back" : "failed", why);
}
