import { describe, expect, it } from "vitest";
import { taskDir } from "../../../jobs/swap/stages/download-task.ts";
import { finishSwap } from "../../../jobs/swap/stages/finish.ts";
import { parseBenchSummary } from "../../../src/engine/bench-serving.ts";
import type { SwapRecord } from "../../../src/swap/swap-record.ts";
import type { Fake } from "./fake-stage-context.ts";
import {
  ago,
  approvedRecord,
  benchOutput,
  type LateOptions,
  LOADED_NUMBERS,
  lateContext,
  later,
  NEW_UNIT,
  OLD_REPO,
  OLD_UNIT,
  PLAN,
  SINGLE_NUMBERS,
} from "./late-stage-fixtures.ts";

const SWAP_ID = "sw-20261201-0001";
const MODEL = `${PLAN.model.repo}@${PLAN.model.sha.slice(0, 7)}`;
const BENCHMARK = {
  single: parseBenchSummary(benchOutput(SINGLE_NUMBERS).stdout!),
  loaded: parseBenchSummary(benchOutput(LOADED_NUMBERS).stdout!),
};
const BUILD_DIR = taskDir("/models", SWAP_ID, "build");
const BUILT = "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432";

const done = (startedAgo: number, finishedAgo: number, detail?: string) => ({
  state: "done" as const,
  startedAt: ago(startedAgo),
  finishedAt: ago(finishedAgo),
  ...(detail === undefined ? {} : { detail }),
});

/** A swap that went all the way: switched, healthy, sane, benchmarked. */
function benchmarked(options: LateOptions = {}): Fake {
  const stages = approvedRecord().stages!;
  return lateContext({
    ...options,
    record: {
      step: "finish",
      tasks: { build: { dir: BUILD_DIR, startedAt: ago(4000), attempts: 1 } },
      engine: { commit: BUILT, version: "0.5.6" },
      switch: { startedAt: ago(500), oldStoppedAt: ago(490), newStartedAt: ago(489), done: true },
      healthyAt: ago(65),
      downtimeSeconds: 425,
      sanity: { ok: true, summary: "sanity passed: 4/4 prompts answered sanely" },
      benchmark: BENCHMARK,
      stages: {
        ...stages,
        switch: done(500, 489),
        health: done(489, 65, "healthy; downtime 7 min"),
        sanity: done(65, 64),
        benchmark: done(64, 0, "61 tok/s single · 415 tok/s loaded"),
      },
      ...options.record,
    },
  });
}

/** A swap that ends before its switch, at the approval, with the engine built (in a directory of its own). */
function beforeSwitch(record: Partial<SwapRecord> = {}): Fake {
  const stages = approvedRecord().stages!;
  return lateContext({
    record: {
      step: "prepare",
      tasks: { build: { dir: BUILD_DIR, startedAt: ago(4000), attempts: 1 } },
      engine: { commit: BUILT, version: "0.5.6" },
      stages: {
        ...stages,
        approval: { state: "running", startedAt: ago(3600), detail: "waiting for an approver" },
      },
      ...record,
    },
  });
}

describe("finishSwap", () => {
  it("records a succeeded swap and returns what the host serves now (with what served before) and its benchmark", async () => {
    const fake = benchmarked();

    const finished = await finishSwap(fake.ctx, "succeeded");

    expect(finished).toEqual({
      serving: {
        unit: NEW_UNIT,
        repo: PLAN.model.repo,
        sha: PLAN.model.sha,
        modelDir: PLAN.modelDir,
        since: ago(65),
        swapId: SWAP_ID,
        engine: "sglang",
        previous: { unit: OLD_UNIT, repo: OLD_REPO, engine: "sglang" },
      },
      benchmark: { repo: PLAN.model.repo, engine: "sglang", result: BENCHMARK },
    });
    const { record } = fake.swap;
    expect(record).toMatchObject({ outcome: "succeeded", step: "done", finishedAt: later(0) });
    expect(record.reason).toBeUndefined();
    expect(record.stages.finish).toEqual({ state: "done", finishedAt: later(0), detail: "succeeded" });
    expect(fake.events()).toEqual([{ type: "finished", outcome: "succeeded", at: later(0) }]);
    expect(fake.audit().map((a) => [a.kind, a.detail])).toEqual([
      ["stage", "finish done: succeeded"],
      ["outcome", `succeeded: ${MODEL}, downtime 7 min 5 s`],
    ]);
    // finishing runs nothing on the host
    expect(fake.host.commands).toEqual([]);
  });

  it("returns no benchmark for a succeeded swap whose benchmark could not run, and keeps that stage failed", async () => {
    const fake = benchmarked({
      record: {
        benchmark: undefined,
        stages: {
          ...approvedRecord().stages!,
          benchmark: { state: "failed", startedAt: ago(64), finishedAt: ago(1), detail: "BENCH_FAILED" },
        },
      },
    });

    const finished = await finishSwap(fake.ctx, "succeeded");

    expect(finished.serving?.unit).toBe(NEW_UNIT);
    expect(finished).not.toHaveProperty("benchmark");
    expect(fake.swap.record.stages.benchmark.state).toBe("failed");
  });

  it("records a rolled-back swap: its reason, the rollback and the outcome audited, no serving change", async () => {
    const why = `${NEW_UNIT} failed: torch.OutOfMemoryError: CUDA out of memory.`;
    const fake = benchmarked({
      record: {
        step: "rollback",
        healthyAt: undefined,
        downtimeSeconds: undefined,
        benchmark: undefined,
        rollbackStartedAt: ago(30),
        rollback: { ok: true, detail: `${OLD_UNIT} is healthy again` },
        stages: {
          ...approvedRecord().stages!,
          switch: done(500, 489),
          health: { state: "failed", startedAt: ago(489), finishedAt: ago(31), detail: why },
        },
      },
    });

    const finished = await finishSwap(fake.ctx, "rolled_back", why);

    expect(finished).toEqual({});
    expect(fake.swap.record).toMatchObject({
      outcome: "rolled_back",
      step: "done",
      reason: why,
      finishedAt: later(0),
    });
    expect(fake.swap.record.stages.finish).toMatchObject({ state: "failed", detail: "rolled back" });
    expect(fake.audit().map((a) => [a.kind, a.detail])).toEqual([
      ["stage", "finish failed: rolled back"],
      ["rollback", `rolled back to ${OLD_UNIT}: ${OLD_UNIT} is healthy again`],
      ["outcome", `rolled_back: ${MODEL} — ${why}`],
    ]);
    expect(fake.events()).toEqual([{ type: "finished", outcome: "rolled_back", at: later(0) }]);
    // after a switch the rollback restored the engine itself; finish touches nothing
    expect(fake.host.commands).toEqual([]);
  });

  it("audits a rollback that failed as such", async () => {
    const fake = benchmarked({
      record: {
        rollback: {
          ok: false,
          detail: `${OLD_UNIT} did not come back: not healthy after 22 min 1 s (limit 22 min)`,
        },
      },
    });

    await finishSwap(fake.ctx, "failed", "health check failed");

    expect(fake.audit().find((a) => a.kind === "rollback")?.detail).toBe(
      `rollback failed to ${OLD_UNIT}: ${OLD_UNIT} did not come back: not healthy after 22 min 1 s (limit 22 min)`,
    );
    expect(fake.swap.record.stages.finish).toMatchObject({ state: "failed", detail: "failed" });
  });

  it("marks the stages still running as skipped when a swap ends mid-way", async () => {
    const fake = beforeSwitch({
      step: "prepare",
      stages: {
        ...approvedRecord().stages!,
        download: { state: "running", startedAt: ago(300), detail: "62 % · 210 MB/s · ETA 4 min" },
        build: { state: "running", startedAt: ago(290), detail: "pip install" },
        approval: { state: "pending" },
      },
    });

    await finishSwap(fake.ctx, "cancelled", "downloaded files are kept in /models/…");

    const { stages } = fake.swap.record;
    expect(stages.download).toEqual({
      state: "skipped",
      startedAt: ago(300),
      finishedAt: later(0),
      detail: "62 % · 210 MB/s · ETA 4 min",
    });
    expect(stages.build).toMatchObject({ state: "skipped", finishedAt: later(0) });
    expect(stages.approval).toEqual({ state: "pending" });
    expect(Object.values(stages).filter((s) => s.state === "running")).toEqual([]);
    // skipping is not an ending the audit records as a stage result
    expect(
      fake
        .audit()
        .filter((a) => a.kind === "stage")
        .map((a) => a.stage),
    ).toEqual(["finish"]);
  });

  it("audits an expiry and skips the waiting approval; nothing on the host is run to undo the build", async () => {
    const fake = beforeSwitch();

    await finishSwap(fake.ctx, "expired", "no decision within 240 min");

    expect(fake.swap.record.stages.approval).toMatchObject({ state: "skipped", finishedAt: later(0) });
    expect(fake.audit().map((a) => [a.kind, a.detail])).toEqual([
      ["stage", "finish failed: expired"],
      ["expiry", `no decision on the plan for ${MODEL} — no decision within 240 min`],
      ["outcome", `expired: ${MODEL} — no decision within 240 min`],
    ]);
    // the build is in a directory of its own: the engine the serving unit runs was never touched
    expect(fake.host.commands).toEqual([]);
    expect(fake.events()).toEqual([{ type: "finished", outcome: "expired", at: later(0) }]);
  });

  it("runs nothing on the host when a swap that built an engine fails before its switch", async () => {
    const fake = beforeSwitch();

    const finished = await finishSwap(fake.ctx, "failed", "the download failed");

    expect(finished).toEqual({});
    expect(fake.host.commands).toEqual([]);
    expect(fake.swap.record.reason).toBe("the download failed");
  });
});
