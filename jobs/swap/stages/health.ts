import { formatSeconds } from "../../../src/reporter/swap-card.ts";
import { interestingTail } from "../../../src/status/probe-host.ts";
import type { StepResult } from "../step-result.ts";
import type { StageContext } from "../swap-context.ts";
import { waitHealthy } from "./wait-healthy.ts";

/** Stage 8: wait for the new server to answer a generation; the downtime clock stops here. */
export async function healthStage(ctx: StageContext): Promise<StepResult> {
  const { record } = ctx;
  const plan = record.plan!;
  const limit = ctx.deps.config.file.swaps.healthTimeoutSeconds ?? plan.healthTimeoutSeconds;
  ctx.stage("health", "running", `waiting for /health_generate (limit ${formatSeconds(limit)})`);
  await ctx.updateCard(true);
  const startedAt = Date.parse(record.switch?.newStartedAt ?? new Date().toISOString());
  const result = await waitHealthy(
    ctx,
    plan.unitName,
    limit,
    async (elapsed) => {
      ctx.stage("health", "running", `loading for ${formatSeconds(elapsed)} (limit ${formatSeconds(limit)})`);
      await ctx.updateCard();
    },
    startedAt,
  );
  if (!result.healthy) {
    ctx.stage("health", "failed", result.why);
    await ctx.say(`❌ \`${plan.unitName}\` did not become healthy: ${result.why}`, {
      log: interestingTail(result.journal),
    });
    return { fail: result.why, touched: true };
  }
  record.healthyAt = new Date().toISOString();
  record.downtimeSeconds = (Date.parse(record.healthyAt) - Date.parse(record.switch!.oldStoppedAt!)) / 1000;
  ctx.stage("health", "done", `healthy; downtime ${formatSeconds(record.downtimeSeconds)}`);
  return { next: "sanity" };
}
