import { runSanity } from "../../../src/engine/sanity.ts";
import { describeError, isHostUnreachable } from "../../../src/errors.ts";
import type { StepResult } from "../step-result.ts";
import type { StageContext } from "../swap-context.ts";

/** Stage 9: deterministic prompts with logprobs; healthy is not sane (NaN output passes /health). */
export async function sanityStage(ctx: StageContext): Promise<StepResult> {
  const { record, deps, host } = ctx;
  ctx.stage("sanity", "running", "deterministic prompts at temperature 0");
  await ctx.updateCard(true);
  try {
    const report = await runSanity((command, options) => ctx.exec(command, options), host.servingPort, {
      timeoutMs: deps.config.file.swaps.sanityTimeoutSeconds * 1000,
    });
    record.sanity = { ok: report.ok, summary: report.summary };
    if (!report.ok) {
      ctx.stage("sanity", "failed", report.summary);
      const lines = report.prompts.map(
        (p) => `• ${p.verdict}: “${p.prompt}” → “${p.output.slice(0, 60)}” (${p.detail})`,
      );
      await ctx.say(`❌ Sanity check failed: ${report.summary}\n${lines.join("\n")}`);
      return { fail: report.summary, touched: true };
    }
    ctx.stage("sanity", "done", report.summary);
    return { next: "benchmark" };
  } catch (error) {
    if (isHostUnreachable(error)) throw error;
    ctx.stage("sanity", "failed", describeError(error));
    return { fail: `sanity check could not run: ${describeError(error)}`, touched: true };
  }
}
