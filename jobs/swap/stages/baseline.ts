import { hostEngine } from "../../../src/config/host-engines.ts";
import { type BenchSettings, LOADED, runBench, SINGLE_STREAM } from "../../../src/engine/bench-serving.ts";
import { describeError, passesThrough } from "../../../src/errors.ts";
import { modelName } from "../../../src/grammar/model-name.ts";
import { execStartFlag } from "../../../src/plan/read-host-facts.ts";
import type { StageContext } from "../../../src/swap/stage-context.ts";
import { oldUnitPort } from "../../../src/swap/unit-ports.ts";

/**
 * A host's first swap has nothing to compare its benchmark with: measure the model serving now, before
 * the switch, once (swaps.baseline). `probe` runs the single-stream benchmark only — 8 short prompts, one
 * at a time, light on production; `full` the loaded one too, which production feels. Skipped when the
 * host has earlier numbers, serves nothing, or it is off. A baseline that cannot run is noted, never a
 * reason to stop the swap.
 */
export async function baselineStep(
  ctx: Pick<StageContext, "host" | "ledger" | "previousEngine" | "settings" | "swap">,
): Promise<void> {
  const { swap, host } = ctx;
  const { record } = swap;
  const kind = ctx.settings.baseline;
  const plan = record.plan;
  if (kind === "off" || record.baseline !== undefined || plan === undefined) return;
  const serving = plan.host.currentUnit;
  if (!serving.exists || !serving.active) return;
  if ((await ctx.ledger.lastBenchmark()) !== undefined) return;
  const word = (flag: string) => execStartFlag(serving.execStart, flag);
  const engine = ctx.previousEngine;
  const path = engine.modelDirOf(serving.execStart);
  const model = word("--served-model-name") ?? (path === undefined ? serving.name : modelName(path));
  if (path === undefined) {
    swap.set({ baseline: { model, kind, error: `${serving.name} names no model directory` } });
    return;
  }
  try {
    const run = (setting: Readonly<BenchSettings>) =>
      runBench(
        engine,
        (command, options) => host.exec(command, options),
        {
          ...setting,
          venv: previousVenv(ctx),
          port: oldUnitPort(ctx.swap.record, host.config.servingPort),
          model: path,
          servedModelName: model,
        },
        { timeoutMs: ctx.settings.benchmarkTimeoutSeconds * 1000 },
      );
    const single = await run(SINGLE_STREAM);
    const loaded = kind === "full" ? await run(LOADED) : undefined;
    swap.set({ baseline: { model, kind, single, ...(loaded === undefined ? {} : { loaded }) } });
  } catch (error) {
    if (passesThrough(error)) throw error;
    swap.set({ baseline: { model, kind, error: describeError(error) } });
  }
}

/** The venv of the engine that serves now (the host's config for it; the plan's when it has none). */
function previousVenv(ctx: Pick<StageContext, "host" | "previousEngine" | "swap">): string {
  const found = hostEngine(ctx.host.config, ctx.previousEngine.kind);
  return found.ok ? found.engine.venv : ctx.swap.record.plan!.venv;
}
