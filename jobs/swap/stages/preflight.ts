import { createHash } from "node:crypto";
import { describeError, isHostUnreachable } from "../../../src/errors.ts";
import { makePlan } from "../../../src/plan/make-plan.ts";
import { modelDirFor } from "../../../src/plan/model-dir.ts";
import { modelFacts } from "../../../src/plan/model-facts.ts";
import { readHostFacts } from "../../../src/plan/read-host-facts.ts";
import type { SwapPlan } from "../../../src/plan/types.ts";
import { renderPlan } from "../../../src/reporter/plan-message.ts";
import type { StepResult } from "../step-result.ts";
import type { StageContext } from "../swap-context.ts";

/**
 * Stage 3: read the host, make the plan, post it. A plan with a failing check ends the swap here with
 * nothing touched; a dry run ends with the plan; otherwise approval may be given from now on, while the
 * download and the engine build run.
 */
export async function preflightStage(ctx: StageContext): Promise<StepResult> {
  const { record, deps, host } = ctx;
  const info = record.model!;
  ctx.stage("preflight", "running", "reading GPUs, disk, engine and the serving unit");
  await ctx.updateCard(true);
  const serving = await deps.store.serving(host.name);
  const currentUnit = serving?.unit ?? host.currentUnit;
  record.previous = { unit: currentUnit, ...(serving?.repo === undefined ? {} : { repo: serving.repo }) };
  let plan: SwapPlan;
  try {
    const modelDir = modelDirFor(host.modelsDir, info.repo, info.sha);
    const facts = await readHostFacts(ctx.transport, {
      host: host.name,
      modelsDir: host.modelsDir,
      venv: host.venv,
      currentUnit,
      modelDir,
    });
    plan = makePlan({
      model: info,
      facts: modelFacts(info),
      host: facts,
      hostConfig: {
        name: host.name,
        modelsDir: host.modelsDir,
        venv: host.venv,
        unitDir: host.unitDir,
        servingPort: host.servingPort,
        currentUnit,
      },
      requestedTp: record.request.tp,
      swapId: record.id,
      ...(deps.recipes === undefined ? {} : { recipes: deps.recipes }),
    });
  } catch (error) {
    if (isHostUnreachable(error)) throw error;
    ctx.stage("preflight", "failed", describeError(error));
    return { fail: describeError(error), touched: false };
  }
  record.plan = plan;
  record.planHash = planHash(plan);
  const refused = await refuseFailingPlan(ctx);
  if (refused !== undefined) return refused;
  ctx.stage("preflight", "done", `${plan.recipe} · tp ${plan.tp} · unit ${plan.unitName}`);
  if (record.request.dryRun) {
    record.planTs = await deps.poster.post(
      record.channel,
      renderPlan(plan, { swapId: record.id, requester: record.requester, status: "dry-run" }),
      { threadTs: record.cardTs },
    );
    return {
      end: "planned",
      reason: "dry run: the plan is in the thread; nothing was downloaded or changed",
    };
  }
  return await awaitApproval(ctx);
}

/** Ends the swap here, nothing touched, when its plan fails a check: the plan is posted as refused. */
export async function refuseFailingPlan(ctx: StageContext): Promise<StepResult | undefined> {
  const { record, deps } = ctx;
  const plan = record.plan!;
  const failing = plan.checks.filter((c) => !c.ok);
  if (failing.length === 0) return undefined;
  ctx.stage("preflight", "failed", failing.map((c) => c.detail).join("; "));
  record.planTs = await deps.poster.post(
    record.channel,
    renderPlan(plan, { swapId: record.id, requester: record.requester, status: "refused" }),
    { threadTs: record.cardTs },
  );
  return { fail: `the plan failed its checks: ${failing.map((c) => c.detail).join("; ")}`, touched: false };
}

/** Opens the approval window and posts the plan; the prepare step waits for the decision from here. */
export async function awaitApproval(ctx: StageContext): Promise<StepResult> {
  const { record, deps } = ctx;
  record.approvalExpiresAt = new Date(
    Date.now() + deps.config.file.approvals.ttlMinutes * 60_000,
  ).toISOString();
  // A decision may arrive the moment the plan is visible: the record must already say it waits for one.
  record.step = "prepare";
  ctx.stage("approval", "running", "waiting for an approver's ✅ on the plan (in the thread)");
  await ctx.save();
  await postPlanForApproval(ctx);
  return { next: "prepare" };
}

/**
 * Posts the plan with its Approve/Reject buttons and ✅/❌ reactions, and indexes it so reactions find
 * the swap. Also run by a resumed swap whose worker died before the plan was posted.
 */
export async function postPlanForApproval(ctx: StageContext): Promise<void> {
  const { record, deps } = ctx;
  record.planTs = await deps.poster.post(
    record.channel,
    renderPlan(record.plan!, {
      swapId: record.id,
      requester: record.requester,
      status: "awaiting-approval",
      waitingFor: "an approver",
    }),
    { threadTs: record.cardTs },
  );
  await deps.store.indexPlanMessage(record.channel, record.planTs, record.id);
  await ctx.save();
  await deps.poster.react(record.channel, record.planTs, "white_check_mark");
  await deps.poster.react(record.channel, record.planTs, "x");
}

/**
 * What an approval is about: the model commit, tp, and the exact unit (flags, paths). Anything else
 * (timings, engine commit before it is known) may change without voiding an approval.
 */
export function planHash(plan: SwapPlan): string {
  return createHash("sha256")
    .update(JSON.stringify({ sha: plan.model.sha, tp: plan.tp, unit: plan.unitName, text: plan.unitText }))
    .digest("hex")
    .slice(0, 16);
}
