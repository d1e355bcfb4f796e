import { describeError } from "../../../src/errors.ts";
import { sh } from "../../../src/host/shell-quote.ts";
import { execStartWords, readHostFacts } from "../../../src/plan/read-host-facts.ts";
import { rollbackPlan } from "../../../src/swap/rollback-plan.ts";
import type { StepResult } from "../step-result.ts";
import type { StageContext } from "../swap-context.ts";
import { awaitApproval, planHash, refuseFailingPlan } from "./preflight.ts";

/**
 * Preflight of `/llm rollback`: the unit that served before is still installed and its model files are
 * still there, so the plan is that unit as it is — nothing to resolve, download or build. Then the same
 * approval, switch, health, sanity and benchmark as any swap.
 */
export async function rollbackPreflightStage(ctx: StageContext): Promise<StepResult> {
  const { record, deps, host } = ctx;
  const target = record.rollbackTo!;
  ctx.stage("resolve", "skipped", "rollback: the model is already on the host");
  ctx.stage("preflight", "running", `checking ${target.unit} and its files`);
  await ctx.updateCard(true);
  const serving = await deps.store.serving(host.name);
  const currentUnit = serving?.unit ?? host.currentUnit;
  record.previous = { unit: currentUnit, ...(serving?.repo === undefined ? {} : { repo: serving.repo }) };
  if (currentUnit === target.unit) {
    ctx.stage("preflight", "failed", `${host.name} already serves ${target.unit}`);
    return { fail: `${host.name} already serves ${target.unit}`, touched: false };
  }
  try {
    const facts = await readHostFacts(ctx.transport, {
      host: host.name,
      modelsDir: host.modelsDir,
      venv: host.venv,
      currentUnit,
      modelDir: host.modelsDir,
    });
    const read = await ctx.exec(sh`
      f=$(systemctl show ${target.unit} --property=FragmentPath --value)
      echo "$f"
      if [ -n "$f" ] && [ -r "$f" ]; then cat "$f"; fi`);
    const [path = "", ...lines] = read.stdout.split("\n");
    const text = lines.join("\n");
    const words = execStartWords(text);
    const modelPath = words[words.indexOf("--model-path") + 1];
    const exists =
      modelPath !== undefined && words.includes("--model-path")
        ? (await ctx.exec(sh`test -d ${modelPath}`)).code === 0
        : false;
    const earlier = target.swapId === undefined ? undefined : (await deps.store.get(target.swapId))?.plan;
    const plan = rollbackPlan({
      swapId: record.id,
      host: facts,
      hostConfig: { modelsDir: host.modelsDir, venv: host.venv, unitDir: host.unitDir },
      target: { name: target.unit, path: path.trim(), text, modelDirExists: exists },
      earlier,
    });
    record.plan = plan;
    record.planHash = planHash(plan);
    // Name the model, not the unit, once the plan knows it (the config's first unit names none).
    record.request.model = { ...record.request.model, repo: plan.model.repo };
  } catch (error) {
    ctx.stage("preflight", "failed", describeError(error));
    return { fail: describeError(error), touched: false };
  }
  const refused = await refuseFailingPlan(ctx);
  if (refused !== undefined) return refused;
  ctx.stage("preflight", "done", `back to ${target.unit}`);
  ctx.stage("download", "skipped", "nothing missing: the model files are on the host");
  ctx.stage("build", "skipped", "nothing to build: the unit runs as installed");
  return await awaitApproval(ctx);
}
