import { runSanity } from "../../../src/engine/sanity.ts";
import { describeError, isHostUnreachable } from "../../../src/errors.ts";
import type { StageContext, StepResult } from "../../../src/swap/stage-context.ts";

/** Stage 9: deterministic prompts with logprobs; healthy is not sane (NaN output passes /health). */
export async function sanityStage(ctx: StageContext): Promise<StepResult> {
  const { swap, host } = ctx;
  await swap.begin("sanity", "deterministic prompts at temperature 0");
  try {
    const report = await runSanity(
      (command, options) => host.exec(command, options),
      host.config.servingPort,
      {
        timeoutMs: ctx.settings.sanityTimeoutSeconds * 1000,
      },
    );
    swap.set({ sanity: { ok: report.ok, summary: report.summary } });
    if (!report.ok) {
      swap.stage("sanity", "failed", report.summary);
      ctx.emit({
        type: "sanity-failed",
        summary: report.summary,
        prompts: report.prompts.map((p) => ({
          verdict: p.verdict,
          prompt: p.prompt.slice(0, 200),
          output: p.output.slice(0, 200),
          detail: p.detail.slice(0, 300),
        })),
      });
      return { fail: report.summary, touched: true };
    }
    swap.stage("sanity", "done", report.summary);
    return { next: "benchmark" };
  } catch (error) {
    if (isHostUnreachable(error)) throw error;
    swap.stage("sanity", "failed", describeError(error));
    return { fail: `sanity check could not run: ${describeError(error)}`, touched: true };
  }
}
