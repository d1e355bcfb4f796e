import { describeEngineSource } from "../../../src/engine/engine-source.ts";
import { runSanity, type SanityReport } from "../../../src/engine/sanity.ts";
import { asCodedError, passesThrough } from "../../../src/errors.ts";
import { failedWith, type StageContext, type StepResult } from "../../../src/swap/stage-context.ts";
import type { SwapStep } from "../../../src/swap/swap-record.ts";
import { portOf } from "./blue-green.ts";

/**
 * What to try after a failed sanity check, from what this swap applied: the recipe's kernel flags and
 * the engine build they ran on. NaN output is a broken kernel backend on this GPU; wrong answers are the
 * model's flags or the engine.
 */
function whatToTry(ctx: Pick<StageContext, "swap">, report: SanityReport): string {
  const plan = ctx.swap.record.plan;
  const kernelFlags = (plan?.flags ?? []).filter(
    (f) => f.flag !== undefined && /backend|quantization|kv-cache-dtype|attention/.test(f.setting),
  );
  const kernels = kernelFlags.map((f) => `${f.flag}${f.value === undefined ? "" : ` ${f.value}`}`);
  // where the kernel flags came from: the recipes that set them (recipes.overrides takes their ids)
  const from = [...new Set(kernelFlags.map((f) => f.from).filter((f): f is string => f !== undefined))];
  const origin = from.length > 0 ? from.join(", ") : `recipe ${plan?.recipe ?? "none"}`;
  const applied =
    kernels.length > 0
      ? `the plan applied ${kernels.join(" ")} (${origin})`
      : `the plan applied the engine's default kernels (recipe ${plan?.recipe ?? "none"})`;
  const engine = plan?.engine === undefined ? "" : ` on engine ${describeEngineSource(plan.engine)}`;
  if (report.prompts.some((p) => p.verdict === "nan")) {
    const ids = from.filter((f) => f.startsWith("recipe ")).map((f) => f.slice("recipe ".length));
    return `${applied}${engine}. NaN logits mean a kernel is broken on this GPU: try another engine build (--engine-ref a newer tag or branch), or other backends in the config (recipes.overrides: ${ids.length > 0 ? ids.join(", ") : "the recipe"}; modelswap recipes <model> shows them)`;
  }
  return `${applied}${engine}. Check the model's flags (quantization, chat template, context length) and the engine version against its model card`;
}

/**
 * Stage 9: deterministic prompts with logprobs; healthy is not sane (NaN output passes /health). `next`:
 * where a sane model goes (the swap's mode says: the release, or blue/green's benchmark or flip).
 */
export async function sanityStage(
  ctx: Pick<StageContext, "emit" | "engine" | "host" | "settings" | "swap">,
  next: SwapStep,
): Promise<StepResult> {
  const { swap, host } = ctx;
  await swap.begin("sanity", "deterministic prompts at temperature 0");
  try {
    const report = await runSanity(
      ctx.engine,
      (command, options) => host.exec(command, options),
      portOf(ctx),
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
      return { fail: report.summary, touched: true, code: "SANITY_FAILED", fix: whatToTry(ctx, report) };
    }
    swap.stage("sanity", "done", report.summary);
    return { next };
  } catch (error) {
    if (passesThrough(error)) throw error;
    swap.stage("sanity", "failed", asCodedError(error).message);
    return failedWith(error, true, "the sanity check could not run");
  }
}
