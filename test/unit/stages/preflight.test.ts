import { describe, expect, it } from "vitest";
import { preflightStage, refuseFailingPlan } from "../../../jobs/swap/stages/preflight.ts";
import { planHash } from "../../../src/approval/plan-hash.ts";
import { CodedError, type ErrorCode } from "../../../src/errors.ts";
import { swapRecordSchema } from "../../../src/swap/swap-record.ts";
import { modelInfoOf } from "../plan-fixtures.ts";
import { fakeContext } from "./fake-stage-context.ts";
import {
  eventsOf,
  gpuQueryCsv,
  h200QueryCsv,
  OLD_UNIT,
  OLD_UNIT_NAME,
  plannedSwap,
  QWEN,
  resolvedRecord,
  SERVING_CHANGES,
  scriptGpuHost,
} from "./stage-fixtures.ts";

const NOW = Date.parse("2026-12-01T12:00:00.000Z");
const QWEN_UNIT = "sglang-nvidia-qwen3-5-397b-a17b-nvfp4-43da92d.service";

function swapOf(info = QWEN(), request: { dryRun?: boolean; tp?: number } = {}) {
  return fakeContext({ record: resolvedRecord(info, request) });
}

describe("the scripted GPU host", () => {
  it("prints nvidia-smi's query in the format of the real H200 capture", () => {
    expect(gpuQueryCsv("h200-1gpu")).toBe(h200QueryCsv());
    expect(gpuQueryCsv("8x-rtx-pro-6000-blackwell").trim().split("\n")).toHaveLength(8);
  });
});

describe("preflightStage", () => {
  it("plans the swap from what the host reports and puts the plan up for approval", async () => {
    const fake = swapOf();
    scriptGpuHost(fake.host, { gpus: gpuQueryCsv("8x-rtx-pro-6000-blackwell") });

    expect(await preflightStage(fake.ctx)).toEqual({ next: "prepare" });

    const { record } = fake.swap;
    const plan = record.plan!;
    expect(plan).toMatchObject({
      ok: true,
      recipe: "modelopt-fp4 + nvfp4-sm120-sglang-moe + nvfp4-sm120-sglang + qwen3.5",
      tp: 8,
      unitName: QWEN_UNIT,
      modelDir: `/srv/models/nvidia--Qwen3.5-397B-A17B-NVFP4--${QWEN().sha.slice(0, 12)}`,
    });
    expect(plan.host.gpus).toHaveLength(8);
    expect(plan.host.gpus[0]).toMatchObject({
      name: "NVIDIA RTX PRO 6000 Blackwell Server Edition",
      computeCapability: { major: 12, minor: 0 },
    });
    expect(plan.checks.every((c) => c.ok)).toBe(true);
    expect(plan.unitText).toContain("--tp-size 8");
    expect(record.planHash).toBe(planHash(plan));
    expect(record.previous).toEqual({ unit: OLD_UNIT_NAME, engine: "sglang" });
    expect(plan.host.currentUnit).toMatchObject({
      name: OLD_UNIT_NAME,
      exists: true,
      active: true,
      text: OLD_UNIT,
    });

    expect(record.stages.preflight).toMatchObject({
      state: "done",
      detail: `modelopt-fp4 + nvfp4-sm120-sglang-moe + nvfp4-sm120-sglang + qwen3.5 · tp 8 · unit ${QWEN_UNIT}`,
    });
    expect(record.stages.approval).toMatchObject({
      state: "running",
      detail: "waiting for an approver's ✅ on the plan (in the thread)",
    });
    // the approval window: from now, for settings.approvalTtlMinutes (240 in the fake)
    expect(record.approval).toEqual({
      requestedAt: "2026-12-01T12:00:00.000Z",
      expiresAt: "2026-12-01T16:00:00.000Z",
    });
    expect(fake.events()).toEqual([
      {
        type: "approval-requested",
        planHash: record.planHash,
        expiresAt: "2026-12-01T16:00:00.000Z",
        at: "2026-12-01T12:00:00.000Z",
      },
    ]);
    expect(() => swapRecordSchema.parse(record)).not.toThrow();

    // preflight reads the host and changes nothing on it
    expect(
      fake.host.ran(/^nvidia-smi --query-gpu=index,name,uuid,.*--format=csv,noheader,nounits$/),
    ).toHaveLength(1);
    expect(fake.host.ran(/systemctl show sglang-old\.service --property=LoadState/)).toHaveLength(1);
    expect(fake.host.ran(SERVING_CHANGES)).toEqual([]);
    expect(fake.host.ran(/mkdir|hf download|rm /)).toEqual([]);
    expect(fake.host.started.size).toBe(0);
  });

  it("opens the approval window for settings.approvalTtlMinutes", async () => {
    const fake = fakeContext({ record: resolvedRecord(QWEN()), settings: { approvalTtlMinutes: 30 } });
    scriptGpuHost(fake.host);
    fake.clock.time = NOW + 5 * 60_000;

    await preflightStage(fake.ctx);

    expect(fake.swap.record.approval).toEqual({
      requestedAt: "2026-12-01T12:05:00.000Z",
      expiresAt: "2026-12-01T12:35:00.000Z",
    });
    expect(eventsOf(fake, "approval-requested")).toMatchObject([{ expiresAt: "2026-12-01T12:35:00.000Z" }]);
  });

  it("plans against the unit an earlier swap left serving, and remembers it as the one to go back to", async () => {
    const fake = fakeContext({
      record: resolvedRecord(QWEN()),
      serving: {
        unit: "sglang-kimi.service",
        repo: "moonshotai/Kimi-K2-Thinking",
        since: "2026-11-30T09:00:00.000Z",
        swapId: "sw-20261130-0001",
        engine: "sglang",
      },
    });
    scriptGpuHost(fake.host, { unit: { name: "sglang-kimi.service", text: OLD_UNIT } });

    expect(await preflightStage(fake.ctx)).toEqual({ next: "prepare" });

    expect(fake.swap.record.previous).toEqual({
      unit: "sglang-kimi.service",
      repo: "moonshotai/Kimi-K2-Thinking",
      engine: "sglang",
    });
    expect(fake.swap.record.plan?.host.currentUnit.name).toBe("sglang-kimi.service");
    expect(fake.host.ran(/systemctl show sglang-kimi\.service/)).toHaveLength(1);
    expect(fake.host.ran(/systemctl show sglang-old\.service/)).toEqual([]);
  });

  it("counts the model's bytes already on disk: only what is still to fetch must fit", async () => {
    const info = QWEN();
    const fake = swapOf(info);
    scriptGpuHost(fake.host, { freeDiskBytes: 5e9, bytesOnDisk: info.totalBytes });

    expect(await preflightStage(fake.ctx)).toEqual({ next: "prepare" });
    expect(fake.swap.record.plan?.checks.find((c) => c.id === "disk")).toMatchObject({
      ok: true,
      detail: expect.stringMatching(
        /^0 B to fetch \(223 GB already there\) \+ nothing left to fetch; 5\.0 GB free/,
      ),
    });
  });

  it("a dry run ends with the plan, planned, and asks nobody for approval", async () => {
    const fake = swapOf(QWEN(), { dryRun: true });
    scriptGpuHost(fake.host);

    expect(await preflightStage(fake.ctx)).toEqual({
      end: "planned",
      reason: "dry run: the plan is in the thread; nothing was downloaded or changed",
    });

    const { record } = fake.swap;
    expect(record.plan?.ok).toBe(true);
    expect(record.stages.preflight.state).toBe("done");
    expect(fake.events()).toEqual([
      { type: "planned", planHash: record.planHash, status: "dry-run", at: "2026-12-01T12:00:00.000Z" },
    ]);
    expect(record.approval).toBeUndefined();
    expect(record.stages.approval.state).toBe("pending");
    expect(fake.host.ran(SERVING_CHANGES)).toEqual([]);
    expect(fake.host.started.size).toBe(0);
  });

  it("refuses NVFP4 on an H200 (compute capability 9.0, from the real capture): failed, nothing touched", async () => {
    const fake = swapOf();
    scriptGpuHost(fake.host, { gpus: h200QueryCsv() });

    const result = await preflightStage(fake.ctx);

    expect(result).toMatchObject({ touched: false });
    const why = (result as { fail: string }).fail;
    // each failing check by its name, no internal word ("none: …"), the recipe's echo of the quantization left out
    expect(why).toMatch(
      /^the plan was refused: quantization: NVFP4 \(ModelOpt NVFP4 .*\) does not run on NVIDIA H200 \(compute capability 9\.0\) with SGLang/,
    );
    expect(why).not.toMatch(/\bnone\b|recipe:/);
    expect(result).toMatchObject({
      code: "PLAN_REFUSED",
      fix: expect.stringMatching(/RTX PRO 6000 Blackwell/),
    });
    const { record } = fake.swap;
    // the refused plan is kept: the thread shows it with its failing checks
    expect(record.plan?.host.gpus).toMatchObject([
      { name: "NVIDIA H200", computeCapability: { major: 9, minor: 0 } },
    ]);
    expect(record.plan?.checks.filter((c) => !c.ok).map((c) => c.id)).toEqual(["quantization", "vram"]);
    expect(record.plan?.checks.find((c) => c.id === "quantization")?.fix).toMatch(/Blackwell/);
    expect(record.stages.preflight).toMatchObject({
      state: "failed",
      detail: expect.stringContaining("does not run on NVIDIA H200 (compute capability 9.0) with SGLang"),
    });
    expect(fake.events()).toEqual([
      { type: "planned", planHash: record.planHash, status: "refused", at: "2026-12-01T12:00:00.000Z" },
    ]);
    expect(record.approval).toBeUndefined();
    expect(record.stages.approval.state).toBe("pending");
    expect(fake.host.ran(SERVING_CHANGES)).toEqual([]);
    expect(fake.host.started.size).toBe(0);
  });

  it("refuses a model the models disk cannot hold, saying how much is short", async () => {
    const fake = swapOf(modelInfoOf("llama-bf16-small"));
    scriptGpuHost(fake.host, { gpus: h200QueryCsv(), freeDiskBytes: 1e9 });

    const result = await preflightStage(fake.ctx);

    expect(result).toEqual({
      fail: expect.stringMatching(
        /^the plan was refused: disk: 5\.0 GB to fetch .*1\.0 GB free at \/srv\/models: 6\.4 GB short$/,
      ),
      code: "PLAN_REFUSED",
      fix: expect.stringMatching(/^free at least 6\.4 GB in \/srv\/models/),
      touched: false,
    });
    expect(fake.swap.record.plan?.checks.filter((c) => !c.ok)).toMatchObject([
      { id: "disk", fix: expect.stringMatching(/^free at least 6\.4 GB in \/srv\/models/) },
    ]);
    expect(fake.swap.record.stages.preflight.state).toBe("failed");
    expect(eventsOf(fake, "planned")).toMatchObject([{ status: "refused" }]);
    expect(eventsOf(fake, "approval-requested")).toEqual([]);
  });

  it("refuses a host without the hf CLI and without the engine venv", async () => {
    const fake = swapOf();
    scriptGpuHost(fake.host, { hubCli: "none", venvOk: false });

    expect(await preflightStage(fake.ctx)).toMatchObject({ touched: false });
    expect(fake.swap.record.plan?.checks.filter((c) => !c.ok).map((c) => c.id)).toEqual(["venv", "hub-cli"]);
    expect(eventsOf(fake, "planned")).toMatchObject([{ status: "refused" }]);
  });

  it.each<ErrorCode>(["HOST_UNREACHABLE", "HOST_CONNECTION_LOST", "HOST_COMMAND_TIMEOUT"])(
    "throws %s (the step is retried later) instead of failing the swap",
    async (code) => {
      const fake = swapOf();
      scriptGpuHost(fake.host);
      const error = new CodedError(
        code,
        "gpu-1: connect ECONNREFUSED 10.0.0.7:22",
        "check that the host is up",
      );
      fake.host.on(/^nvidia-smi/, error);

      await expect(preflightStage(fake.ctx)).rejects.toBe(error);

      const { record } = fake.swap;
      expect(record.stages.preflight.state).toBe("running");
      expect(record.plan).toBeUndefined();
      expect(record.approval).toBeUndefined();
      expect(fake.events()).toEqual([]);
    },
  );

  it("fails, nothing touched, when nvidia-smi itself fails on the host", async () => {
    const fake = swapOf();
    scriptGpuHost(fake.host, {
      gpus: {
        code: 9,
        stdout: "",
        stderr: "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
      },
    });

    const result = await preflightStage(fake.ctx);

    expect(result).toEqual({
      fail: expect.stringMatching(/^nvidia-smi failed \(exit 9\): NVIDIA-SMI has failed /),
      code: "HOST_COMMAND_FAILED",
      fix: expect.stringMatching(/^the NVIDIA driver is not responding/),
      touched: false,
    });
    expect(fake.swap.record.stages.preflight).toMatchObject({
      state: "failed",
      detail: (result as { fail: string }).fail,
    });
    expect(fake.swap.record.plan).toBeUndefined();
    expect(fake.events()).toEqual([]);
  });
});

describe("refuseFailingPlan", () => {
  it("lets a plan whose checks all pass go on, saying nothing", async () => {
    const fake = await plannedSwap();
    const before = fake.events().length;
    expect(refuseFailingPlan(fake.ctx)).toBeUndefined();
    expect(fake.swap.record.stages.preflight.state).toBe("done");
    expect(fake.events()).toHaveLength(before);
  });

  it("refuses a plan with a failing check: every failing check is named, the plan is shown as refused", async () => {
    const fake = await plannedSwap();
    const plan = fake.swap.record.plan!;
    fake.swap.set({
      plan: {
        ...plan,
        checks: [
          ...plan.checks,
          {
            id: "flags",
            ok: false,
            detail: "this engine build lacks what the recipe needs: no flag for dp-size",
          },
          { id: "extra", ok: false, detail: "second problem" },
        ],
      },
    });

    expect(refuseFailingPlan(fake.ctx)).toEqual({
      fail: "the plan was refused: flags: this engine build lacks what the recipe needs: no flag for dp-size; extra: second problem",
      code: "PLAN_REFUSED",
      fix: "see the plan's failing checks in the thread",
      touched: false,
    });
    expect(fake.swap.record.stages.preflight).toMatchObject({
      state: "failed",
      detail: "this engine build lacks what the recipe needs: no flag for dp-size; second problem",
    });
    expect(eventsOf(fake, "planned")).toEqual([
      { type: "planned", planHash: fake.swap.record.planHash, status: "refused", at: expect.any(String) },
    ]);
  });
});

describe("preflightStage: the engine build the host trusts (issue 28 §5)", () => {
  const servingUnit = (commit12: string) =>
    OLD_UNIT.replace(
      "[Service]\n",
      `[Service]\nEnvironment=PYTHONPATH=/srv/models/.modelswap/engines/sglang-${commit12}-sw-20261120-0001/python\n`,
    );

  it("reuses the serving unit's build when the ref resolves to the commit it was built from, and says so", async () => {
    const fake = fakeContext({ record: resolvedRecord(QWEN(), { engineRef: undefined }) });
    scriptGpuHost(fake.host, { unit: { name: OLD_UNIT_NAME, text: servingUnit("1a2b3c4d5e6f") } });
    expect(await preflightStage(fake.ctx)).toEqual({ next: "prepare" });
    const plan = fake.swap.record.plan!;
    expect(plan.engine).toMatchObject({
      ref: "main",
      commit: "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d",
      buildDir: "/srv/models/.modelswap/engines/sglang-1a2b3c4d5e6f-sw-20261120-0001",
      reused: true,
    });
    expect(plan.notes).toContain(
      "Engine: main at 1a2b3c4, upstream main, as no request, profile or host names another: the serving unit's build of that commit is reused, no rebuild.",
    );
    expect(plan.unitText).toContain(
      "Environment=PYTHONPATH=/srv/models/.modelswap/engines/sglang-1a2b3c4d5e6f-sw-20261120-0001/python",
    );
  });

  it("builds anew when the serving unit's build is of another commit; the host's default ref when the request names none", async () => {
    const fake = fakeContext({
      record: resolvedRecord(QWEN(), { engineRef: undefined }),
      host: { engineRef: "v0.5.2" },
    });
    scriptGpuHost(fake.host, { unit: { name: OLD_UNIT_NAME, text: servingUnit("1a2b3c4d5e6f") } });
    expect(await preflightStage(fake.ctx)).toEqual({ next: "prepare" });
    const plan = fake.swap.record.plan!;
    expect(plan.engine).toMatchObject({
      ref: "v0.5.2",
      kind: "tag",
      commit: "5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e",
    });
    expect(plan.engine?.reused).toBeUndefined();
    expect(plan.engine?.buildDir).toMatch(/sglang-5e5e5e5e5e5e-/);
    expect(plan.notes).toContain(
      "Engine: v0.5.2 at 5e5e5e5, gpu-1's default, hosts[].engineRef: a new build for this swap.",
    );
  });
});

describe("preflightStage: flags from three places (issue 28 §4)", () => {
  it("takes the model's profile (tp, flags, engine ref) and the host's house flags, each said where it came from; the request's --tp and --set win", async () => {
    const profiles = [
      {
        model: "nvidia/Qwen3.5-*",
        flags: [{ setting: "context-length", value: "131072" as const, reason: "agents send 100k prompts" }],
        tp: 4,
        engineRef: "v0.5.2",
      },
    ];
    const fake = fakeContext({
      record: resolvedRecord(QWEN(), { engineRef: undefined }),
      host: { flags: [{ setting: "enable-metrics", value: true }] },
      settings: { profiles },
    });
    scriptGpuHost(fake.host);
    expect(await preflightStage(fake.ctx)).toEqual({ next: "prepare" });
    const plan = fake.swap.record.plan!;
    expect(plan.tp).toBe(4);
    expect(plan.engine?.ref).toBe("v0.5.2");
    expect(plan.flags.find((f) => f.setting === "context-length")).toMatchObject({
      value: "131072",
      from: "profile nvidia/Qwen3.5-* (models[])",
      reason: "agents send 100k prompts",
    });
    expect(plan.flags.find((f) => f.setting === "enable-metrics")).toMatchObject({
      from: "host gpu-1 (hosts[].flags)",
    });

    const asked = fakeContext({
      record: resolvedRecord(QWEN(), {
        engineRef: undefined,
        tp: 8,
        sets: [{ setting: "context-length", value: "32768" }],
      }),
      settings: { profiles },
    });
    scriptGpuHost(asked.host);
    expect(await preflightStage(asked.ctx)).toEqual({ next: "prepare" });
    const mine = asked.swap.record.plan!;
    expect(mine.tp).toBe(8);
    expect(mine.flags.find((f) => f.setting === "context-length")).toMatchObject({
      value: "32768",
      from: "swap (--set)",
    });
  });
});
