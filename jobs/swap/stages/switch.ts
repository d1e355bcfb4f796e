import { describeError, isHostUnreachable } from "../../../src/errors.ts";
import { sh } from "../../../src/host/shell-quote.ts";
import type { StepResult } from "../step-result.ts";
import type { StageContext } from "../swap-context.ts";
import { updatePlanMessage } from "./prepare.ts";

/**
 * Stage 7: install the new unit, reload systemd, `disable --now` the old unit and `enable --now` the new
 * one (enabled, so it survives a reboot). Every step is idempotent, and the record says how far it got, so
 * a worker that dies here resumes the same switch instead of running another.
 */
export async function switchStage(ctx: StageContext): Promise<StepResult> {
  const { record, host } = ctx;
  const plan = record.plan!;
  const oldUnit = record.previous!.unit;
  if (record.switch === undefined) {
    // Reach the host before anything is marked as begun: a host that is away, or that presents another
    // host key, fails (or waits) here with the old service untouched, and needs no rollback.
    await ctx.must(sh`true`, "reaching the host");
    await updatePlanMessage(ctx, "approved", record.decision!.by);
    record.switch = { startedAt: new Date().toISOString() };
    await ctx.save();
  }
  ctx.stage("switch", "running", `${oldUnit} → ${plan.unitName}`);
  await ctx.updateCard(true);
  try {
    await ctx.must(
      sh`${ctx.privileged(sh`tee ${`${host.unitDir}/${plan.unitName}`}`)} > /dev/null`,
      `writing ${plan.unitName}`,
      { stdin: plan.unitText },
    );
    await ctx.must(ctx.privileged(sh`systemctl daemon-reload`), "systemctl daemon-reload");
    if (record.switch.oldStoppedAt === undefined) {
      // A host that served nothing (no such unit file) has nothing to stop.
      if (oldUnit !== plan.unitName && plan.host.currentUnit.exists) {
        await ctx.must(ctx.privileged(sh`systemctl disable --now ${oldUnit}`), `stopping ${oldUnit}`);
      }
      record.switch.oldStoppedAt = new Date().toISOString();
      await ctx.save();
    }
    await ctx.must(ctx.privileged(sh`systemctl enable --now ${plan.unitName}`), `starting ${plan.unitName}`);
    record.switch.newStartedAt ??= new Date().toISOString();
    record.switch.done = true;
  } catch (error) {
    // Every command above is idempotent: an unreachable host gets the same switch again, later.
    if (isHostUnreachable(error)) throw error;
    ctx.stage("switch", "failed", describeError(error));
    return { fail: describeError(error), touched: true };
  }
  ctx.stage("switch", "done", `${oldUnit} stopped and disabled; ${plan.unitName} enabled and started`);
  await ctx.say(
    `🔀 Switched: \`${oldUnit}\` stopped and disabled, \`${plan.unitName}\` enabled and started. Downtime clock running.`,
  );
  return { next: "health" };
}
