import { describeEngineSource } from "../engine/engine-source.ts";
import { renderUnit } from "../engine/render-unit.ts";
import type { SwapPlan } from "./types.ts";
import { unifiedDiff } from "./unit-diff.ts";

/**
 * Renders the plan's unit from its flags and diffs it against the unit serving now; recomputes `ok`.
 * Called whenever the flags change (first plan, then again with the engine build's spellings).
 */
export function withRenderedUnit(plan: SwapPlan): SwapPlan {
  const unit = renderUnit({
    repo: plan.model.repo,
    sha: plan.model.sha,
    swapId: plan.swapId,
    serving: plan.host.currentUnit.name,
    venv: plan.venv,
    ...(plan.engine === undefined
      ? {}
      : { engine: { buildDir: plan.engine.buildDir, describe: describeEngineSource(plan.engine) } }),
    flags: plan.flags,
    timeoutStartSeconds: plan.healthTimeoutSeconds,
    ...(plan.clients === undefined ? {} : { drainSeconds: plan.clients.drainSeconds }),
    ...(plan.clients?.blueGreen === undefined ? {} : { visibleDevices: plan.clients.blueGreen.devices }),
  });
  const current = plan.host.currentUnit;
  const dir = plan.unitDir.replace(/\/+$/, "");
  const unitPath = `${dir}/${unit.name}`;
  const unitDiff = unifiedDiff(
    current.exists ? current.text : "",
    unit.text,
    current.exists ? `${dir}/${current.name}` : "/dev/null",
    unitPath,
  );
  return {
    ...plan,
    unitName: unit.name,
    unitText: unit.text,
    unitPath,
    unitDiff,
    ok: plan.checks.every((c) => c.ok),
  };
}
