import type { BenchResult } from "../../../src/engine/bench-serving.ts";
import { type BenchSettings, LOADED, runBench, SINGLE_STREAM } from "../../../src/engine/bench-serving.ts";
import { describeError, isHostUnreachable } from "../../../src/errors.ts";
import { sh } from "../../../src/host/shell-quote.ts";
import { renderBenchmarkComparison } from "../../../src/reporter/benchmark-table.ts";
import { shareBenchmarkChart } from "../share-benchmark-chart.ts";
import type { StepResult } from "../step-result.ts";
import type { StageContext } from "../swap-context.ts";

export interface SwapBenchmark {
  single: BenchResult;
  loaded: BenchResult;
}

/**
 * Stage 10: `sglang.bench_serving` single-stream and loaded, compared with the numbers recorded for the
 * model before. A benchmark that cannot run is reported as such — never silently skipped — but does not
 * undo a healthy, sane swap.
 */
export async function benchmarkStage(ctx: StageContext): Promise<StepResult> {
  const { record, deps, host } = ctx;
  const plan = record.plan!;
  if (record.stages.benchmark.state === "running") {
    // Resumed after a crash: a run the dead worker started may still be loading the server, and two at
    // once would skew both. ("[s]" keeps pkill from matching the shell that runs it.)
    await ctx.exec(
      sh`pkill -f ${`[s]glang.bench_serving --backend sglang --host 127.0.0.1 --port ${host.servingPort} `} || true`,
    );
  }
  ctx.stage("benchmark", "running", "single stream, then loaded");
  await ctx.updateCard(true);
  try {
    const run = (setting: Readonly<BenchSettings>) =>
      runBench(
        (command, options) => ctx.exec(command, options),
        { ...setting, venv: host.venv, port: host.servingPort, model: plan.modelDir },
        { timeoutMs: deps.config.file.swaps.benchmarkTimeoutSeconds * 1000 },
      );
    const current: SwapBenchmark = { single: await run(SINGLE_STREAM), loaded: await run(LOADED) };
    const previous = await deps.store.lastBenchmark(host.name);
    record.benchmark = current;
    const before =
      previous === undefined ? undefined : { model: previous.repo, ...(previous.result as SwapBenchmark) };
    await ctx.say(renderBenchmarkComparison(current, before));
    await shareBenchmarkChart(ctx, current, before);
    ctx.stage(
      "benchmark",
      "done",
      `${current.single.outputThroughput?.toFixed(0) ?? "?"} tok/s single · ${current.loaded.outputThroughput?.toFixed(0) ?? "?"} tok/s loaded`,
    );
  } catch (error) {
    if (isHostUnreachable(error)) throw error;
    ctx.stage("benchmark", "failed", describeError(error));
    await ctx.say(
      `⚠️ The benchmark could not run: ${describeError(error)}. The new model is healthy and sane; it stays.`,
    );
  }
  return { next: "finish" };
}
