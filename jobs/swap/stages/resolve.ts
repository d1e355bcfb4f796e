import { describeError } from "../../../src/errors.ts";
import { formatGB } from "../../../src/plan/byte-units.ts";
import type { StepResult } from "../step-result.ts";
import type { StageContext } from "../swap-context.ts";

/** Stage 2: the Hub pins the revision to a commit and tells sizes, gating, license and configs. */
export async function resolveStage(ctx: StageContext): Promise<StepResult> {
  const { record, deps } = ctx;
  ctx.stage("resolve", "running", `${record.request.model.repo}@${record.request.model.revision}`);
  await ctx.updateCard(true);
  try {
    const info = await deps.hub.resolve(record.request.model);
    record.model = info;
    ctx.stage(
      "resolve",
      "done",
      `commit ${info.sha.slice(0, 7)} · ${formatGB(info.totalBytes)} · ${info.files.length} files`,
    );
    return { next: "preflight" };
  } catch (error) {
    ctx.stage("resolve", "failed", describeError(error));
    return { fail: describeError(error), touched: false };
  }
}
