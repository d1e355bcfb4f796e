import { formatSeconds } from "../../../src/reporter/swap-card.ts";
import type { SwapOutcome } from "../../../src/swap/swap-record.ts";
import type { StageContext } from "../swap-context.ts";
import { restoreEngine } from "./restore-engine.ts";

/**
 * Stage 11: record the outcome, update what the host serves, free the host, and broadcast the result
 * once to the channel. A failed rollback is said loudly (<!channel>): the host serves nothing.
 */
export async function finishSwap(ctx: StageContext, outcome: SwapOutcome, reason?: string): Promise<void> {
  const { record, deps } = ctx;
  record.outcome = outcome;
  record.step = "done";
  record.finishedAt = new Date().toISOString();
  if (reason !== undefined) record.reason = reason;
  ctx.log.info({ outcome, reason: record.reason }, "swap finished");
  ctx.stage(
    "finish",
    outcome === "succeeded" || outcome === "planned" ? "done" : "failed",
    outcome.replace("_", " "),
  );
  for (const stage of Object.values(record.stages)) {
    if (stage.state === "running") stage.state = "skipped";
  }
  if (outcome !== "succeeded") record.engineRestore ??= await restoreEngine(ctx);
  auditOutcome(ctx, outcome);
  const plan = record.plan;
  if (outcome === "succeeded" && plan !== undefined) {
    await deps.store.setServing(record.host, {
      unit: plan.unitName,
      repo: plan.model.repo,
      sha: plan.model.sha,
      modelDir: plan.modelDir,
      since: record.healthyAt ?? record.finishedAt,
      swapId: record.id,
    });
    if (record.benchmark !== undefined)
      await deps.store.setLastBenchmark(record.host, plan.model.repo, record.benchmark);
  }
  await ctx.save();
  await deps.store.unlockHost(record.host, record.id);
  await ctx.updateCard(true);
  await ctx.say(finalLine(ctx, outcome), { broadcast: outcome !== "planned" });
}

/** The rollback (when there was one), an expiry, and the outcome, for the audit stream (written by the save). */
function auditOutcome(ctx: StageContext, outcome: SwapOutcome): void {
  const { record } = ctx;
  const model = `${record.request.model.repo}${record.plan ? `@${record.plan.model.sha.slice(0, 7)}` : ""}`;
  const why = record.reason === undefined ? "" : ` — ${record.reason}`;
  if (record.rollback !== undefined)
    ctx.audit(
      "rollback",
      `${record.rollback.ok ? "rolled back" : "rollback failed"} to ${record.previous?.unit ?? "?"}: ${record.rollback.detail}`,
    );
  if (outcome === "expired") ctx.audit("expiry", `no decision on the plan for ${model}${why}`);
  const downtime =
    record.downtimeSeconds === undefined ? "" : `, downtime ${formatSeconds(record.downtimeSeconds)}`;
  ctx.audit("outcome", `${outcome}: ${model}${downtime}${why}`);
}

/** The one line the thread (and, but for a dry run, the channel) gets at the end. */
export function finalLine(ctx: Pick<StageContext, "record">, outcome: SwapOutcome): string {
  // The reason quotes errors and journal lines: a ``` in one would open a code block over the rest of
  // the line (mentions like <@U…> in it are ours and stay).
  const record = { ...ctx.record, reason: ctx.record.reason?.replaceAll("```", "ˋˋˋ") };
  const model = `${record.request.model.repo}${record.plan ? `@${record.plan.model.sha.slice(0, 7)}` : ""}`;
  const engine = record.engineRestore === undefined ? "" : ` ${record.engineRestore}`;
  switch (outcome) {
    case "succeeded":
      return `✅ *${record.host} now serves ${model}* (\`${record.plan?.unitName}\`). Downtime ${formatSeconds(record.downtimeSeconds ?? 0)}; sanity: ${record.sanity?.summary ?? "n/a"}.${record.stages.benchmark.state === "failed" ? " ⚠️ The benchmark did not run (see above)." : ""}`;
    case "rolled_back":
      return `↩️ *Swap to ${model} on ${record.host} rolled back*: ${record.reason}. ${record.rollback?.detail ?? ""}`;
    case "failed":
      return record.rollback !== undefined && !record.rollback.ok
        ? `<!channel> 🚨 *${record.host} serves nothing*: the swap to ${model} failed (${record.reason}) and the rollback failed too: ${record.rollback.detail}. Act now: \`/llm status ${record.host}\`, then restart \`${record.previous?.unit}\` by hand.`
        : `❌ *Swap to ${model} on ${record.host} failed*: ${record.reason}. ${engine === "" ? "Nothing on the host was changed." : `The serving unit was not touched;${engine}.`}`;
    case "rejected":
      return `🚫 Swap to ${model} on ${record.host} rejected: ${record.reason}.${engine === "" ? "" : ` Then${engine}.`}`;
    case "expired":
      return `⌛ Swap to ${model} on ${record.host} expired: ${record.reason}.${engine === "" ? "" : ` Then${engine}.`}`;
    case "cancelled":
      return `✋ Swap to ${model} on ${record.host} cancelled: ${record.reason}.${engine === "" ? "" : ` Then${engine}.`}`;
    case "planned":
      return `📝 Dry run: the plan for ${model} on ${record.host} is above. Nothing was downloaded or changed.`;
  }
}
