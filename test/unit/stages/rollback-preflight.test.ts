import { describe, expect, it } from "vitest";
import { prepareStage } from "../../../jobs/swap/stages/prepare.ts";
import { rollbackPreflightStage } from "../../../jobs/swap/stages/rollback-preflight.ts";
import { planHash } from "../../../src/approval/plan-hash.ts";
import { CodedError } from "../../../src/errors.ts";
import { makePlan } from "../../../src/plan/make-plan.ts";
import type { ServingState } from "../../../src/store/host-state.ts";
import { swapRecordSchema } from "../../../src/swap/swap-record.ts";
import { planInput } from "../plan-fixtures.ts";
import { type FakeOptions, fakeContext } from "./fake-stage-context.ts";
import {
  eventsOf,
  h200QueryCsv,
  OLD_MODEL_DIR,
  OLD_UNIT,
  OLD_UNIT_NAME,
  OLD_UNIT_PATH,
  SERVING_CHANGES,
  scriptGpuHost,
} from "./stage-fixtures.ts";

const QWEN_UNIT = "sglang-qwen3-5-397b-a17b-nvfp4.service";
const QWEN_UNIT_TEXT = `[Service]
ExecStart=/srv/venv/bin/python -m sglang.launch_server --model-path /srv/models/nvidia--Qwen3.5-397B-A17B-NVFP4--43da92d546ab --tp-size 8
`;

/** What the swap that installed the Qwen unit left: it serves now, and sglang-old.service served before. */
const SERVING: ServingState = {
  unit: QWEN_UNIT,
  repo: "nvidia/Qwen3.5-397B-A17B-NVFP4",
  since: "2026-11-30T09:00:00.000Z",
  swapId: "sw-20261130-0001",
  engine: "sglang",
  previous: { unit: OLD_UNIT_NAME, repo: "meta-llama/Llama-3.2-1B-Instruct", engine: "sglang" },
};

/** A `/llm rollback` to sglang-old.service on a host whose files are all still there. */
function rollbackSwap(
  options: FakeOptions & { target?: { text: string; path: string }; filesThere?: boolean } = {},
) {
  const fake = fakeContext({
    serving: SERVING,
    ...options,
    record: {
      step: "preflight",
      request: { model: { repo: OLD_UNIT_NAME, revision: "installed" }, dryRun: false, engineRef: "main" },
      rollbackTo: { unit: OLD_UNIT_NAME },
      ...options.record,
    },
  });
  scriptGpuHost(fake.host, { gpus: h200QueryCsv(), unit: { name: QWEN_UNIT, text: QWEN_UNIT_TEXT } });
  const target = options.target ?? { text: OLD_UNIT, path: OLD_UNIT_PATH };
  fake.host.on(/f=\$\(systemctl show sglang-old\.service --property=FragmentPath --value\)/, {
    stdout: `${target.path}\n${target.text}`,
  });
  fake.host.on(/^test -d /, { code: options.filesThere === false ? 1 : 0 });
  return fake;
}

describe("rollbackPreflightStage", () => {
  it("plans going back to the installed unit as it is, and puts that plan up for approval", async () => {
    const fake = rollbackSwap();

    expect(await rollbackPreflightStage(fake.ctx)).toEqual({ next: "prepare" });

    const { record } = fake.swap;
    const plan = record.plan!;
    expect(plan).toMatchObject({
      ok: true,
      unitName: OLD_UNIT_NAME,
      unitPath: OLD_UNIT_PATH,
      unitText: OLD_UNIT,
      modelDir: OLD_MODEL_DIR,
      tp: 1,
      recipe: "as installed",
    });
    expect(plan.checks).toEqual([
      { id: "unit", ok: true, detail: `${OLD_UNIT_NAME} is still installed (${OLD_UNIT_PATH})` },
      { id: "model-files", ok: true, detail: `its model files are in ${OLD_MODEL_DIR}` },
    ]);
    expect(plan.unitDiff).toContain(
      `-ExecStart=/srv/venv/bin/python -m sglang.launch_server --model-path /srv/models/nvidia--Qwen3.5`,
    );
    expect(record.planHash).toBe(planHash(plan));
    // the record names the model the unit serves, not the unit
    expect(record.request.model).toEqual({ repo: "meta-llama/Llama-3.2-1B-Instruct", revision: "installed" });
    expect(record.previous).toEqual({
      unit: QWEN_UNIT,
      repo: "nvidia/Qwen3.5-397B-A17B-NVFP4",
      engine: "sglang",
    });

    expect(record.stages.resolve).toMatchObject({
      state: "skipped",
      detail: "rollback: the model is already on the host",
    });
    expect(record.stages.preflight).toMatchObject({ state: "done", detail: `back to ${OLD_UNIT_NAME}` });
    expect(record.stages.download).toMatchObject({
      state: "skipped",
      detail: "nothing missing: the model files are on the host",
    });
    expect(record.stages.build).toMatchObject({
      state: "skipped",
      detail: "nothing to build: the unit runs as installed",
    });
    expect(record.stages.approval.state).toBe("running");
    expect(record.approval?.expiresAt).toBe("2026-12-01T16:00:00.000Z");
    expect(fake.events()).toEqual([
      {
        type: "approval-requested",
        planHash: record.planHash,
        expiresAt: "2026-12-01T16:00:00.000Z",
        at: "2026-12-01T12:00:00.000Z",
      },
    ]);
    expect(() => swapRecordSchema.parse(record)).not.toThrow();

    expect(
      fake.host.ran(/systemctl show sglang-qwen3-5-397b-a17b-nvfp4\.service --property=LoadState/),
    ).toHaveLength(1);
    expect(fake.host.ran(/^test -d /)).toEqual([`test -d ${OLD_MODEL_DIR}`]);
    expect(fake.host.ran(SERVING_CHANGES)).toEqual([]);
    expect(fake.host.started.size).toBe(0);
  });

  it("takes the model and its facts from the plan of the swap that installed the unit, when it is kept", async () => {
    const earlier = makePlan(planInput("llama-bf16-small", "h200-1gpu"));
    const fake = rollbackSwap({
      record: { rollbackTo: { unit: OLD_UNIT_NAME, swapId: "sw-20261120-0001" } },
      earlierPlans: { "sw-20261120-0001": earlier },
    });

    expect(await rollbackPreflightStage(fake.ctx)).toEqual({ next: "prepare" });

    const plan = fake.swap.record.plan!;
    expect(plan.model).toEqual(earlier.model);
    expect(plan.facts).toEqual(earlier.facts);
    expect(plan.recipe).toBe(earlier.recipe);
    // still the unit as installed on the host
    expect(plan.unitText).toBe(OLD_UNIT);
    expect(fake.swap.record.request.model.repo).toBe(earlier.model.repo);
  });

  it("then waits for nothing but the approval: no download, no build, straight to the switch once approved", async () => {
    const fake = rollbackSwap();
    const { ctx } = fake;
    await rollbackPreflightStage(ctx);
    fake.swap.to.stepTo("prepare");
    const hash = fake.swap.record.planHash!;

    expect(await prepareStage(ctx)).toEqual({ wait: 1000 });
    fake.decisions[hash] = {
      approved: true,
      by: "U0BOB00001",
      at: "2026-12-01T12:01:00.000Z",
      planHash: hash,
      via: "button",
    };
    expect(await prepareStage(ctx)).toEqual({ next: "switch" });

    expect(fake.host.started.size).toBe(0);
    expect(fake.swap.record.tasks).toEqual({});
    expect(fake.swap.record.stages.approval).toMatchObject({ state: "done", detail: "" });
  });

  it("refuses, reading nothing, when the host already serves that unit", async () => {
    const fake = rollbackSwap({ serving: { ...SERVING, unit: OLD_UNIT_NAME } });

    expect(await rollbackPreflightStage(fake.ctx)).toEqual({
      fail: `gpu-1 already serves ${OLD_UNIT_NAME}`,
      touched: false,
    });

    const { record } = fake.swap;
    expect(record.stages.preflight).toMatchObject({
      state: "failed",
      detail: `gpu-1 already serves ${OLD_UNIT_NAME}`,
    });
    expect(record.plan).toBeUndefined();
    expect(record.approval).toBeUndefined();
    expect(record.stages.download.state).toBe("pending");
    expect(fake.host.commands).toEqual([]);
    expect(fake.events()).toEqual([]);
  });

  it("refuses when the config's first unit is the target and nothing was swapped yet", async () => {
    // no ledger entry: the host's configured currentUnit (sglang-old.service) serves
    const fake = rollbackSwap({ serving: undefined });
    expect(await rollbackPreflightStage(fake.ctx)).toEqual({
      fail: `gpu-1 already serves ${OLD_UNIT_NAME}`,
      touched: false,
    });
    expect(fake.host.commands).toEqual([]);
  });

  it("refuses, nothing touched, when the unit's model files are gone", async () => {
    const fake = rollbackSwap({ filesThere: false });

    const result = await rollbackPreflightStage(fake.ctx);

    expect(result).toMatchObject({
      fail: `the plan was refused: model-files: its model files are missing (${OLD_MODEL_DIR})`,
      code: "PLAN_REFUSED",
      touched: false,
    });
    const { record } = fake.swap;
    expect(record.plan?.checks.find((c) => c.id === "model-files")).toMatchObject({
      ok: false,
      fix: "the files were deleted; swap to the old model by name, which downloads it again",
    });
    expect(record.stages.preflight).toMatchObject({ state: "failed" });
    expect(record.stages.download.state).toBe("pending");
    expect(record.stages.build.state).toBe("pending");
    expect(record.approval).toBeUndefined();
    expect(fake.events()).toEqual([
      { type: "planned", planHash: record.planHash, status: "refused", at: "2026-12-01T12:00:00.000Z" },
    ]);
    expect(fake.host.ran(SERVING_CHANGES)).toEqual([]);
  });

  it("refuses when the unit itself was removed from the host", async () => {
    const fake = rollbackSwap({ target: { path: "", text: "" } });

    const result = await rollbackPreflightStage(fake.ctx);

    expect(result).toMatchObject({ touched: false });
    expect((result as { fail: string }).fail).toContain(`${OLD_UNIT_NAME} is gone from the host`);
    expect(fake.swap.record.plan?.checks.filter((c) => !c.ok).map((c) => c.id)).toEqual([
      "unit",
      "model-files",
    ]);
    // without a unit file there is no --model-path to look for
    expect(fake.host.ran(/^test -d /)).toEqual([]);
    expect(eventsOf(fake, "planned")).toMatchObject([{ status: "refused" }]);
  });

  it("throws when the host cannot be reached, so the step is retried", async () => {
    const fake = rollbackSwap();
    const error = new CodedError("HOST_UNREACHABLE", "gpu-1: connect ETIMEDOUT", "check the host");
    fake.host.on(/^nvidia-smi/, error);

    await expect(rollbackPreflightStage(fake.ctx)).rejects.toBe(error);
    expect(fake.swap.record.stages.preflight.state).toBe("running");
    expect(fake.swap.record.plan).toBeUndefined();
    expect(fake.events()).toEqual([]);
  });
});
