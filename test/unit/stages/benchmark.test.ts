import { describe, expect, it } from "vitest";
import { benchmarkStage } from "../../../jobs/swap/stages/benchmark.ts";
import { parseBenchSummary } from "../../../src/engine/bench-serving.ts";
import type { LastBenchmark } from "../../../src/store/host-state.ts";
import type { Fake } from "./fake-stage-context.ts";
import {
  ago,
  approvedRecord,
  benchOutput,
  benchRun,
  type LateOptions,
  LOADED_NUMBERS,
  lateContext,
  later,
  OLD_REPO,
  PLAN,
  SINGLE_NUMBERS,
  unreachable,
  WARMUP_FAILED,
} from "./late-stage-fixtures.ts";

/** Where a cold swap goes after its benchmark, and when it runs (the cold mode says: jobs/swap/modes). */
const COLD = { next: "retire", when: undefined } as const;

/** A healthy, sane new model: the benchmark is next. */
function sane(options: LateOptions = {}): Fake {
  const stages = approvedRecord().stages!;
  return lateContext({
    ...options,
    record: {
      step: "benchmark",
      switch: { startedAt: ago(80), oldStoppedAt: ago(70), newStartedAt: ago(69), done: true },
      healthyAt: ago(10),
      downtimeSeconds: 60,
      sanity: { ok: true, summary: "sanity passed: 4/4 prompts answered sanely" },
      stages: {
        ...stages,
        switch: { state: "done", startedAt: ago(80), finishedAt: ago(69) },
        health: { state: "done", startedAt: ago(69), finishedAt: ago(10) },
        sanity: { state: "done", startedAt: ago(10), finishedAt: ago(9) },
      },
      ...options.record,
    },
  });
}

/** What the outgoing model measured on this host when it was swapped in. */
const KIMI: LastBenchmark = {
  repo: OLD_REPO,
  engine: "sglang",
  result: {
    single: parseBenchSummary(
      benchOutput({ ...SINGLE_NUMBERS, outputThroughput: 48.2, medianTpotMs: 20.3 }).stdout!,
    ),
    loaded: parseBenchSummary(
      benchOutput({ ...LOADED_NUMBERS, outputThroughput: 301.7, medianTpotMs: 45.9 }).stdout!,
    ),
  },
};

function benchAnswers(fake: Fake): void {
  fake.host.on(benchRun(1), benchOutput(SINGLE_NUMBERS));
  fake.host.on(benchRun(16), benchOutput(LOADED_NUMBERS));
}

describe("benchmarkStage", () => {
  it("runs bench_serving single-stream then loaded, and reports both with the outgoing model's numbers", async () => {
    const fake = sane({ lastBenchmark: KIMI });
    benchAnswers(fake);

    const result = await benchmarkStage(fake.ctx, COLD);

    expect(result).toEqual({ next: "retire" });
    const runs = fake.host.ran(/sglang\.bench_serving/);
    expect(runs).toEqual([
      `/opt/sglang/.venv/bin/python -m sglang.bench_serving --backend sglang --host 127.0.0.1 --port 30000 --model ${PLAN.modelDir} --dataset-name random --random-input-len 1024 --random-output-len 128 --random-range-ratio 1 --num-prompts 8 --max-concurrency 1 --seed 1 --output-file /dev/null --disable-tqdm`,
      `/opt/sglang/.venv/bin/python -m sglang.bench_serving --backend sglang --host 127.0.0.1 --port 30000 --model ${PLAN.modelDir} --dataset-name random --random-input-len 1024 --random-output-len 128 --random-range-ratio 1 --num-prompts 32 --max-concurrency 16 --seed 1 --output-file /dev/null --disable-tqdm`,
    ]);
    // a fresh run has nothing to kill
    expect(fake.host.ran(/pkill/)).toEqual([]);

    const benchmark = fake.swap.record.benchmark!;
    expect(benchmark.single).toMatchObject({
      successfulRequests: 8,
      requested: 8,
      maxConcurrency: 1,
      outputThroughput: 61.42,
      medianTtftMs: 180.33,
      medianTpotMs: 15.91,
    });
    expect(benchmark.loaded).toMatchObject({
      successfulRequests: 32,
      requested: 32,
      maxConcurrency: 16,
      outputThroughput: 414.99,
    });
    expect(fake.events()).toEqual([
      {
        type: "benchmarked",
        current: benchmark,
        previous: {
          model: OLD_REPO,
          single: KIMI.result.single,
          loaded: KIMI.result.loaded,
          basis: "last-swap",
          engine: "sglang",
        },
        engine: "sglang",
        at: later(0),
      },
    ]);
    expect(fake.swap.record.stages.benchmark).toEqual({
      state: "done",
      startedAt: later(0),
      finishedAt: later(0),
      detail: "61 tok/s single · 415 tok/s loaded",
    });
  });

  it("reports no previous numbers when nothing was benchmarked on the host before", async () => {
    const fake = sane();
    benchAnswers(fake);

    await benchmarkStage(fake.ctx, COLD);

    const [event] = fake.events();
    expect(event?.type).toBe("benchmarked");
    expect(event).not.toHaveProperty("previous");
  });

  it("reports a benchmark that cannot run (benchmark-failed) and still goes on to finish the swap", async () => {
    const fake = sane({ lastBenchmark: KIMI });
    fake.host.on(benchRun(1), WARMUP_FAILED);
    fake.host.on(benchRun(16), benchOutput(LOADED_NUMBERS));

    const result = await benchmarkStage(fake.ctx, COLD);

    expect(result).toEqual({ next: "retire" });
    // the loaded run is not started after the first one failed
    expect(fake.host.ran(/sglang\.bench_serving/)).toHaveLength(1);
    expect(fake.swap.record.benchmark).toBeUndefined();
    const events = fake.events();
    expect(events.map((e) => e.type)).toEqual(["benchmark-failed"]);
    const error = (events[0] as { error: string }).error;
    expect(error).toContain("bench_serving printed no result summary");
    expect(error).toContain("Warmup failed");
    expect(error).toContain("(BENCH_FAILED)");
    expect(fake.swap.record.stages.benchmark).toMatchObject({
      state: "failed",
      finishedAt: later(0),
      detail: error,
    });
  });

  it("fails the benchmark, not the swap, when no request of the loaded run succeeds", async () => {
    const fake = sane();
    fake.host.on(benchRun(1), benchOutput(SINGLE_NUMBERS));
    fake.host.on(benchRun(16), {
      stdout: benchOutput(LOADED_NUMBERS).stdout!.replace(
        /Successful requests: +32/,
        `${"Successful requests:".padEnd(40)} 0`,
      ),
    });

    expect(await benchmarkStage(fake.ctx, COLD)).toEqual({ next: "retire" });

    expect(fake.events()).toMatchObject([
      { type: "benchmark-failed", error: expect.stringContaining("none of the 32 requests succeeded") },
    ]);
    expect(fake.swap.record.benchmark).toBeUndefined();
  });

  it("resumed after a crash mid-run, stops the dead worker's bench_serving before running its own", async () => {
    const fake = sane({
      record: {
        stages: {
          ...approvedRecord().stages!,
          benchmark: { state: "running", startedAt: ago(30), detail: "single stream, then loaded" },
        },
      },
    });
    benchAnswers(fake);

    expect(await benchmarkStage(fake.ctx, COLD)).toEqual({ next: "retire" });

    const commands = fake.host.commands.map((c) => c.text);
    expect(commands[0]).toBe(
      "pkill -f '[s]glang.bench_serving --backend sglang --host 127.0.0.1 --port 30000 ' || true",
    );
    expect(commands.slice(1).every((c) => c.includes("sglang.bench_serving"))).toBe(true);
    expect(fake.swap.record.stages.benchmark).toMatchObject({ state: "done", startedAt: ago(30) });
  });

  it("throws an unreachable host for a retry", async () => {
    const fake = sane();
    fake.host.on(benchRun(1), benchOutput(SINGLE_NUMBERS));
    fake.host.on(benchRun(16), unreachable());

    await expect(benchmarkStage(fake.ctx, COLD)).rejects.toMatchObject({ code: "HOST_UNREACHABLE" });

    expect(fake.swap.record.stages.benchmark.state).toBe("running");
    expect(fake.events()).toEqual([]);
  });
});
