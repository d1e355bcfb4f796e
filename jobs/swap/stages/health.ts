import { isoNow } from "../../../src/clock.ts";
import { formatSeconds } from "../../../src/format-duration.ts";
import { interestingTail } from "../../../src/status/probe-host.ts";
import type { StageContext, StepResult } from "../../../src/swap/stage-context.ts";
import { eventLines } from "../../../src/swap/swap-events.ts";
import { waitHealthy } from "./wait-healthy.ts";

/** How often a long health wait saves its progress (the card shows it; the reporter paces the edits). */
const PROGRESS_EVERY_MS = 5000;

/** Stage 8: wait for the new server to answer a generation; the downtime clock stops here. */
export async function healthStage(ctx: StageContext): Promise<StepResult> {
  const { swap, clock } = ctx;
  const plan = swap.record.plan!;
  const limit = ctx.settings.healthTimeoutSeconds ?? plan.healthTimeoutSeconds;
  await swap.begin("health", `waiting for /health_generate (limit ${formatSeconds(limit)})`);
  const startedAt = Date.parse(swap.record.switch?.newStartedAt ?? isoNow(clock));
  let saved = clock.now();
  const result = await waitHealthy(
    ctx,
    plan.unitName,
    limit,
    async (elapsed) => {
      swap.stage(
        "health",
        "running",
        `loading for ${formatSeconds(elapsed)} (limit ${formatSeconds(limit)})`,
      );
      if (clock.now() - saved < PROGRESS_EVERY_MS) return;
      saved = clock.now();
      await swap.checkpoint();
    },
    startedAt,
  );
  if (!result.healthy) {
    swap.stage("health", "failed", result.why);
    ctx.emit({
      type: "health-failed",
      unit: plan.unitName,
      why: result.why,
      journal: eventLines(interestingTail(result.journal)),
    });
    return { fail: result.why, touched: true };
  }
  const healthyAt = isoNow(clock);
  const downtimeSeconds = (Date.parse(healthyAt) - Date.parse(swap.record.switch!.oldStoppedAt!)) / 1000;
  swap.set({ healthyAt, downtimeSeconds });
  swap.stage("health", "done", `healthy; downtime ${formatSeconds(downtimeSeconds)}`);
  ctx.emit({ type: "healthy", unit: plan.unitName, downtimeSeconds });
  return { next: "sanity" };
}
