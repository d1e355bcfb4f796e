import { asCodedError } from "../../../src/errors.ts";
import { hubPullRequest, hubPullRequestRefusal } from "../../../src/grammar/model-ref.ts";
import { summarize } from "../../../src/hub/types.ts";
import { modelFacts } from "../../../src/plan/model-facts.ts";
import { leftOnHub, realSize, realTotalBytes } from "../../../src/plan/weight-scale.ts";
import { failedWith, type StageContext, type StepResult } from "../../../src/swap/stage-context.ts";

/**
 * Stage 2: the Hub pins the revision to a commit and tells sizes, gating, license and configs. The config
 * files are read here, once, into the model's facts; the record keeps the facts, not the files.
 */
export async function resolveStage(
  ctx: Pick<StageContext, "hub" | "settings" | "swap">,
): Promise<StepResult> {
  const { swap } = ctx;
  const { model } = swap.record.request;
  await swap.begin("resolve", `${model.repo}@${model.revision}`);
  const pullRequest = hubPullRequest(model.revision);
  if (pullRequest !== undefined && !ctx.settings.hub.allowPullRequests) {
    // /llm swap refuses it already; a request queued before the config changed is refused here.
    const why = hubPullRequestRefusal(model.repo, pullRequest);
    swap.stage("resolve", "failed", why);
    return { fail: why, touched: false };
  }
  try {
    const info = await ctx.hub.resolve(model);
    const facts = modelFacts(info);
    const scale = ctx.settings.weightScale;
    swap.set({ model: summarize(info), facts });
    const left = leftOnHub(info);
    swap.stage(
      "resolve",
      "done",
      `commit ${info.sha.slice(0, 7)} · ${realSize(realTotalBytes(info, scale), info.totalBytes, scale)} · ${info.files.length} files${left === undefined ? "" : ` · ${left}`}`,
    );
    return { next: "preflight" };
  } catch (error) {
    swap.stage("resolve", "failed", asCodedError(error).message);
    return failedWith(error, false);
  }
}
