import { describe, expect, it } from "vitest";
import { buildStep } from "../../../jobs/swap/stages/build.ts";
import { taskDir } from "../../../jobs/swap/stages/download-task.ts";
import { prepareStage } from "../../../jobs/swap/stages/prepare.ts";
import type { Decision } from "../../../src/swap/swap-record.ts";
import type { Fake } from "./fake-stage-context.ts";
import {
  countingStarts,
  engineHelp,
  eventsOf,
  finishBuild,
  plannedSwap,
  SERVING_CHANGES,
} from "./stage-fixtures.ts";

const buildDir = (fake: Fake) => taskDir("/srv/models", fake.swap.record.id, "build");
const downloadDir = (fake: Fake) => taskDir("/srv/models", fake.swap.record.id, "download");

function approve(fake: Fake, planHash: string, at = "2026-12-01T12:01:00.000Z"): Decision {
  const decision: Decision = { approved: true, by: "U0BOB00001", at, planHash, via: "reaction" };
  fake.decisions[planHash] = decision;
  return decision;
}

/** An engine whose --help spells fp4-gemm-backend the older way (--fp4-gemm-runner-backend). */
const OLDER_SPELLING = () => engineHelp({ rename: { "--fp4-gemm-backend": "--fp4-gemm-runner-backend" } });

describe("buildStep", () => {
  it("starts the engine build once, at the requested ref and without the Hub token", async () => {
    const fake = await plannedSwap({
      settings: { downloadSecrets: { HF_TOKEN: "hf_sEcReT0123456789" } },
      record: {
        request: {
          model: { repo: "nvidia/Qwen3.5-397B-A17B-NVFP4", revision: "main" },
          dryRun: false,
          engineRef: "v0.5.2",
        },
      },
    });
    const { ctx, starts } = countingStarts(fake);
    const dir = buildDir(fake);
    const checkpoints = fake.checkpoints();

    expect(await buildStep(ctx)).toBeUndefined();

    expect(starts).toHaveLength(1);
    expect(starts[0]!.dir).toBe(dir);
    const script = starts[0]!.script;
    const engine = fake.swap.record.plan!.engine!;
    // the tag's commit (v0.5.2 is annotated: the commit it tags), in a directory of this swap's own
    expect(engine).toMatchObject({ kind: "tag", fullRef: "refs/tags/v0.5.2", commit: "5e".repeat(20) });
    const build = `/srv/models/.modelswap/engines/sglang-5e5e5e5e5e5e-${fake.swap.record.id}`;
    expect(engine.buildDir).toBe(build);
    expect(script).toContain(
      `git -C ${build}.partial fetch -q --depth 1 https://github.com/sgl-project/sglang.git refs/tags/v0.5.2`,
    );
    expect(script).toContain(`if [ "$got" != ${"5e".repeat(20)} ]; then`);
    expect(script).toContain(`mv ${build}.partial ${build}`);
    expect(script).toContain(
      `PYTHONPATH=${build}/python /srv/venv/bin/python -m sglang.launch_server --help > ${dir}/help.txt`,
    );
    // the engine source the serving unit runs and the venv's packages are never touched
    expect(script).not.toContain("/srv/sglang");
    expect(script).not.toMatch(/pip install|git clean/);
    expect(fake.swap.record.plan!.unitText).toContain(`Environment=PYTHONPATH=${build}/python`);
    expect(fake.host.started.get(dir)?.secrets).toEqual({});
    expect(fake.swap.record.tasks.build).toEqual({ dir, startedAt: "2026-12-01T12:00:00.000Z", attempts: 1 });
    expect(fake.swap.record.stages.build).toMatchObject({
      state: "running",
      detail: "fetching tag v0.5.2 at 5e5e5e5 of https://github.com/sgl-project/sglang.git",
    });
    expect(fake.checkpoints()).toBe(checkpoints + 1);

    // while it runs: its last log line on the card, and no second start
    fake.host.status.set(dir, {
      state: "running",
      exitCode: undefined,
      logTail: [
        "modelswap: fetching v0.5.2",
        `  Building editable for sglang (pyproject.toml): started ${"·".repeat(100)}`,
      ],
    });
    expect(await buildStep(ctx)).toBeUndefined();
    expect(await buildStep(ctx)).toBeUndefined();
    expect(starts).toHaveLength(1);
    expect(fake.swap.record.stages.build.detail).toBe(
      `  Building editable for sglang (pyproject.toml): started ${"·".repeat(100)}`.slice(0, 80),
    );
    expect(fake.host.ran(SERVING_CHANGES)).toEqual([]);
  });

  it("attaches to a build found running after a crash, never starting a second one", async () => {
    const fake = await plannedSwap();
    const { ctx, starts } = countingStarts(fake);
    fake.host.status.set(buildDir(fake), {
      state: "running",
      exitCode: undefined,
      logTail: ["Collecting build deps"],
    });

    expect(await buildStep(ctx)).toBeUndefined();

    expect(starts).toEqual([]);
    expect(fake.swap.record.tasks.build).toMatchObject({ dir: buildDir(fake), attempts: 1 });
    expect(fake.swap.record.stages.build).toMatchObject({
      state: "running",
      detail: "Collecting build deps",
    });
  });

  it("fails, nothing touched, with a `build-failed` event carrying the log, when the build exits non-zero", async () => {
    const fake = await plannedSwap();
    const { ctx } = countingStarts(fake);
    await buildStep(ctx);
    const log = ["  error: subprocess-exited-with-error", "ERROR: Failed building editable for sglang"];
    fake.host.status.set(buildDir(fake), { state: "exited", exitCode: 1, logTail: log });

    expect(await buildStep(ctx)).toEqual({
      fail: "the engine build failed (ERROR: Failed building editable for sglang)",
      touched: false,
    });
    expect(fake.swap.record.stages.build).toMatchObject({ state: "failed", detail: "exit 1" });
    expect(eventsOf(fake, "build-failed")).toEqual([{ type: "build-failed", log, at: expect.any(String) }]);
    expect(fake.swap.record.engine).toBeUndefined();
    expect(eventsOf(fake, "built")).toEqual([]);
  });

  it("fails when the build died without an exit status", async () => {
    const fake = await plannedSwap();
    const { ctx } = countingStarts(fake);
    await buildStep(ctx);
    fake.host.status.set(buildDir(fake), { state: "dead", exitCode: undefined, logTail: [] });

    expect(await buildStep(ctx)).toEqual({ fail: "the engine build failed (dead)", touched: false });
    expect(fake.swap.record.stages.build).toMatchObject({ state: "failed", detail: "exit dead" });
  });

  it("records the built commit and version; a build with every flag of the plan keeps the plan and its approval", async () => {
    const fake = await plannedSwap();
    const { ctx } = countingStarts(fake);
    const before = { hash: fake.swap.record.planHash, unit: fake.swap.record.plan!.unitText };
    const approval = fake.swap.record.approval;
    await buildStep(ctx);
    fake.clock.time += 5 * 60_000;
    finishBuild(fake.host, buildDir(fake));

    expect(await buildStep(ctx)).toBeUndefined();

    const { record } = fake.swap;
    expect(record.engine).toEqual({
      commit: "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d",
      version: "0.5.2",
    });
    expect(record.stages.build).toMatchObject({ state: "done", detail: "commit 1a2b3c4 · sglang 0.5.2" });
    expect(eventsOf(fake, "built")).toEqual([
      {
        type: "built",
        commit: "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d",
        version: "0.5.2",
        engine: "sglang",
        at: "2026-12-01T12:05:00.000Z",
      },
    ]);
    expect(record.plan?.checks.find((c) => c.id === "flags")).toEqual({
      id: "flags",
      ok: true,
      detail: `this engine build has all ${record.plan!.flags.length} flags of the plan`,
    });
    expect(record.planHash).toBe(before.hash);
    expect(record.plan?.unitText).toBe(before.unit);
    expect(record.approval).toEqual(approval);
    expect(eventsOf(fake, "approval-requested")).toHaveLength(1);
    // a done build is not looked at again
    expect(await buildStep(ctx)).toBeUndefined();
    expect(eventsOf(fake, "built")).toHaveLength(1);
  });

  it("refuses the plan, the serving side untouched, when the build lacks a flag of the recipe", async () => {
    const fake = await plannedSwap();
    const { ctx } = countingStarts(fake);
    await prepareStage(ctx);
    finishBuild(fake.host, buildDir(fake), { help: engineHelp({ omit: ["--fp4-gemm-backend"] }) });

    const result = await prepareStage(ctx);

    expect(result).toEqual({
      fail: "this engine build lacks what the recipe needs: no flag for fp4-gemm-backend (build an engine that has it: --engine-ref <newer ref> (upstream main has every flag of the recipes))",
      touched: false,
    });
    const { record } = fake.swap;
    expect(record.plan?.checks.find((c) => c.id === "flags")).toMatchObject({ ok: false });
    expect(record.plan?.unitText).not.toContain("fp4-gemm");
    expect(eventsOf(fake, "planned")).toEqual([
      { type: "planned", planHash: record.planHash, status: "refused", at: expect.any(String) },
    ]);
    // the refused plan is not put up for approval
    expect(eventsOf(fake, "approval-requested")).toHaveLength(1);
    // the build itself worked; the download is stopped (its files stay)
    expect(record.stages.build.state).toBe("done");
    expect(fake.host.stopped).toEqual([downloadDir(fake), buildDir(fake)]);
    expect(record.stages.download).toMatchObject({ state: "skipped", detail: "stopped" });
    expect(fake.host.ran(SERVING_CHANGES)).toEqual([]);
  });

  it("refuses the plan when the build's choices lack the recipe's value (no qwen3_coder tool-call parser)", async () => {
    const fake = await plannedSwap();
    const { ctx } = countingStarts(fake);
    await buildStep(ctx);
    const help = engineHelp().replace(/(--tool-call-parser \{[^}]*?)qwen3_coder,/g, "$1");
    expect(help).toMatch(/--tool-call-parser \{deepseekv3,/);
    expect(help).not.toContain("qwen3_coder");
    finishBuild(fake.host, buildDir(fake), { help });

    const result = await buildStep(ctx);

    // SGLang's argparse would refuse `--tool-call-parser qwen3_coder` at the new unit's start: after the switch
    expect(result).toMatchObject({ touched: false });
    expect((result as { fail?: string } | undefined)?.fail).toContain(
      "--tool-call-parser does not accept qwen3_coder",
    );
    expect(eventsOf(fake, "planned")).toMatchObject([{ status: "refused" }]);
  });

  it("puts the plan up for approval again when the build spells a flag differently", async () => {
    const fake = await plannedSwap();
    const { ctx } = countingStarts(fake);
    const before = fake.swap.record.planHash!;
    await buildStep(ctx);
    fake.clock.time += 20 * 60_000;
    finishBuild(fake.host, buildDir(fake), { help: OLDER_SPELLING() });

    expect(await buildStep(ctx)).toBeUndefined();

    const { record } = fake.swap;
    expect(record.plan?.flags.find((f) => f.setting === "fp4-gemm-backend")).toMatchObject({
      flag: "--fp4-gemm-runner-backend",
      value: "flashinfer_cudnn",
    });
    expect(record.plan?.unitText).toContain("--fp4-gemm-runner-backend flashinfer_cudnn");
    expect(record.planHash).not.toBe(before);
    // a new window from now
    expect(record.approval).toEqual({
      requestedAt: "2026-12-01T12:20:00.000Z",
      expiresAt: "2026-12-01T16:20:00.000Z",
    });
    expect(record.stages.approval).toMatchObject({
      state: "running",
      detail: "the plan changed (flag spellings of this engine): approval needed again",
    });
    expect(eventsOf(fake, "approval-requested").at(-1)).toEqual({
      type: "approval-requested",
      planHash: record.planHash,
      expiresAt: "2026-12-01T16:20:00.000Z",
      replaces: { planHash: before, voided: false, why: "flag spellings of this engine" },
      at: "2026-12-01T12:20:00.000Z",
    });
  });

  it("voids an approval of the old plan: the switch waits for an approval of the new one", async () => {
    const fake = await plannedSwap();
    const { ctx } = countingStarts(fake);
    const first = fake.swap.record.planHash!;
    const download = downloadDir(fake);

    expect(await prepareStage(ctx)).toEqual({ wait: 1000 });
    approve(fake, first);
    expect(await prepareStage(ctx)).toEqual({ wait: 0 });
    expect(fake.swap.record.decision).toMatchObject({ approved: true, planHash: first });
    expect(fake.swap.record.stages.approval).toMatchObject({
      state: "done",
      detail: "waiting for the download and engine build",
    });

    fake.host.status.set(download, { state: "exited", exitCode: 0, logTail: [] });
    finishBuild(fake.host, buildDir(fake), { help: OLDER_SPELLING() });
    expect(await prepareStage(ctx)).toEqual({ wait: 1000 });

    const second = fake.swap.record.planHash!;
    expect(second).not.toBe(first);
    expect(eventsOf(fake, "approval-requested").at(-1)?.replaces).toEqual({
      planHash: first,
      voided: true,
      why: "flag spellings of this engine",
    });
    expect(fake.swap.record.decision).toBeUndefined();
    expect(fake.swap.record.stages.approval.state).toBe("running");
    // still waiting: the approval of the first plan does not count for the second
    expect(await prepareStage(ctx)).toEqual({ wait: 1000 });

    const decision = approve(fake, second, "2026-12-01T12:30:00.000Z");
    expect(await prepareStage(ctx)).toEqual({ next: "switch" });
    expect(fake.swap.record.decision).toEqual(decision);
    expect(fake.host.ran(SERVING_CHANGES)).toEqual([]);
  });

  it("says an approval is void when it was given since the last look (before the swap recorded it)", async () => {
    const fake = await plannedSwap();
    const { ctx } = countingStarts(fake);
    const first = fake.swap.record.planHash!;
    expect(await prepareStage(ctx)).toEqual({ wait: 1000 });
    // an approver approves while the job is parked; by the look this wakes, the build has finished
    approve(fake, first);
    finishBuild(fake.host, buildDir(fake), { help: OLDER_SPELLING() });

    expect(await prepareStage(ctx)).toEqual({ wait: 1000 });

    expect(eventsOf(fake, "approval-requested").at(-1)?.replaces).toEqual({
      planHash: first,
      voided: true,
      why: "flag spellings of this engine",
    });
  });
});
