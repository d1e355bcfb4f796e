import { type BenchSettings, LOADED, runBench, SINGLE_STREAM } from "../../../src/engine/bench-serving.ts";
import { describeError, passesThrough } from "../../../src/errors.ts";
import { sh } from "../../../src/host/shell-quote.ts";
import type { StageContext, StepResult } from "../../../src/swap/stage-context.ts";
import type { SwapBenchmark, SwapStep } from "../../../src/swap/swap-record.ts";
import { portOf } from "./blue-green.ts";

/**
 * Stage 10: the engine's benchmark (SGLang's `sglang.bench_serving`) single-stream and loaded, compared with the numbers recorded for the
 * model before. A benchmark that cannot run is reported as such — never silently skipped — but does not
 * undo a healthy, sane swap.
 */
export async function benchmarkStage(
  ctx: Pick<StageContext, "emit" | "engine" | "host" | "ledger" | "previousEngine" | "settings" | "swap">,
  /** Where the swap goes next, and when this runs (the swap's mode says: beside production, after the flip). */
  { next, when }: { next: SwapStep; when: "reduced" | "before-flip" | "after-flip" | undefined },
): Promise<StepResult> {
  const { swap, host } = ctx;
  const plan = swap.record.plan!;
  const port = portOf(ctx);
  // blue/green sharing GPUs before the flip: a lighter loaded run, so production keeps its compute
  const reduced = when === "reduced";
  if (swap.record.stages.benchmark.state === "running") {
    // Resumed after a crash: a run the dead worker started may still be loading the server, and two at
    // once would skew both.
    await host.tryChange(sh`pkill -f ${ctx.engine.benchProcessPattern(port)} || true`);
  }
  await swap.begin(
    "benchmark",
    `single stream, then loaded${reduced ? " (4 streams: production shares these GPUs)" : ""}${when === undefined ? "" : when === "after-flip" ? ", with production on it" : ", beside production"}`,
  );
  try {
    const run = (setting: Readonly<BenchSettings>) =>
      runBench(
        ctx.engine,
        (command, options) => host.exec(command, options),
        {
          ...setting,
          venv: plan.venv,
          port,
          model: plan.modelDir,
          // the name the unit serves it by: the Hub id, unless the config or the swap named it otherwise
          servedModelName:
            plan.flags.find((f) => f.setting === "served-model-name")?.value ?? plan.model.repo,
        },
        { timeoutMs: ctx.settings.benchmarkTimeoutSeconds * 1000 },
      );
    const current: SwapBenchmark = {
      single: await run(SINGLE_STREAM),
      loaded: await run(reduced ? REDUCED_LOAD : LOADED),
    };
    const last = await ctx.ledger.lastBenchmark();
    const baseline = swap.record.baseline;
    const previous =
      last !== undefined
        ? {
            model: last.repo,
            ...last.result,
            basis: "last-swap" as const,
            engine: last.engine,
          }
        : baseline?.single !== undefined
          ? {
              model: baseline.model,
              single: baseline.single,
              ...(baseline.loaded === undefined ? {} : { loaded: baseline.loaded }),
              basis: baseline.kind,
              engine: ctx.previousEngine.kind,
            }
          : undefined;
    swap.set({ benchmark: current });
    ctx.emit({
      type: "benchmarked",
      current,
      ...(previous === undefined ? {} : { previous }),
      ...(when === undefined ? {} : { when }),
      engine: ctx.engine.kind,
    });
    swap.stage(
      "benchmark",
      "done",
      `${current.single.outputThroughput?.toFixed(0) ?? "?"} tok/s single · ${current.loaded.outputThroughput?.toFixed(0) ?? "?"} tok/s loaded`,
    );
  } catch (error) {
    if (passesThrough(error)) throw error;
    swap.stage("benchmark", "failed", describeError(error));
    ctx.emit({ type: "benchmark-failed", error: describeError(error) });
  }
  return { next };
}

/** The loaded run at a quarter of its streams (blue/green on shared GPUs, before the flip). */
const REDUCED_LOAD: Readonly<BenchSettings> = Object.freeze({ ...LOADED, concurrency: 4, numPrompts: 8 });
