import { describe, expect, it } from "vitest";
import { checkHealth } from "../../jobs/monitor/health-check.ts";
import { modelOfUnit } from "../../jobs/monitor/incident-facts.ts";
import { sglangEngine } from "../../src/engine/sglang/sglang-engine.ts";
import { CodedError } from "../../src/errors.ts";
import type { GpuInfo } from "../../src/gpu/nvidia-smi.ts";
import type { ShellCommand } from "../../src/host/shell-quote.ts";
import type { ExecResult, HostTransport } from "../../src/host/transport.ts";
import { formatOutage, renderAlert, renderRecovery } from "../../src/reporter/alert-message.ts";
import { LIMITS } from "../../src/slack/blocks.ts";

const gpu = (index: number): GpuInfo => ({
  index,
  name: "NVIDIA H200",
  uuid: `GPU-${index}`,
  memoryTotalMiB: 143771,
  memoryUsedMiB: 0,
  memoryFreeMiB: 143183,
  utilizationPct: 0,
  temperatureC: 33,
  powerDrawW: 80.76,
  computeCapability: { major: 9, minor: 0 },
  driverVersion: "580.159.04",
});

const base = {
  host: "gpu-1",
  model: "Qwen/Qwen3-8B-FP8",
  unit: "sglang-gpu-1.service",
  since: new Date("2026-11-29T22:19:18Z"),
  failures: 3,
  failingCheck: "`sglang-gpu-1.service` is failed; /health_generate: connection refused",
  firstFailure: "/health_generate answered HTTP 503",
  journalTail: ["Traceback (most recent call last):", "RuntimeError: CUDA error: an illegal memory access"],
  journalProblem: undefined,
  gpus: [gpu(0), gpu(1)],
  gpuProblem: undefined,
  intervalSeconds: 30,
  recoveryThreshold: 2,
};

describe("renderAlert", () => {
  it("says an unreachable host's serving state is unknown, says the SSH error once, and offers only what can work", () => {
    const why = {
      code: "HOST_UNREACHABLE",
      message: "gpu-1 (10.0.0.5:22): connect ECONNREFUSED",
      fix: "check that sshd runs",
    };
    const alert = renderAlert({ ...base, journalTail: [], gpus: [], unreachable: why });
    const all = `${alert.text}\n${JSON.stringify(alert.blocks)}`;
    expect(alert.text).toMatch(/^⚠️ gpu-1 is unreachable from modelswap: serving state unknown/);
    expect(all).not.toContain("is not serving");
    expect(all.split("connect ECONNREFUSED").length - 1).toBe(2); // the message's text and its blocks, once each
    expect(all).not.toContain("/llm rollback");
    expect(all).toContain("(HOST_UNREACHABLE)");
  });

  it("words a changed host key as a security event: what was seen against the pin, and how to check it", () => {
    const why = {
      code: "HOST_KEY_MISMATCH",
      message:
        "gpu-1 (10.0.0.5:22) presented host key SHA256:new, but the config pins SHA256:old; the connection was refused",
      fix: "check the key on the host itself (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub)",
    };
    const alert = renderAlert({ ...base, journalTail: [], gpus: [], unreachable: why });
    const all = JSON.stringify(alert.blocks);
    expect(alert.text).toMatch(/^🔐 gpu-1's SSH host key changed: modelswap refuses to connect/);
    expect(all).toContain(
      "*What changed:* gpu-1 (10.0.0.5:22) presented host key SHA256:new, but the config pins SHA256:old",
    );
    expect(all).toContain("ssh-keygen -lf");
    expect(all).not.toContain("not serving");
  });

  it("says what, since when, the journal, the GPUs and what to do", () => {
    const alert = renderAlert(base);
    const all = `${alert.text}\n${JSON.stringify(alert.blocks)}`;
    expect(alert.text).toMatch(/^🚨 gpu-1 is not serving \(Qwen\/Qwen3-8B-FP8/);
    expect(all).toContain("2026-11-29 22:19:18 UTC (3 failed checks in a row)");
    expect(all).toContain("first failed check: /health_generate answered HTTP 503");
    expect(all).toContain("RuntimeError: CUDA error: an illegal memory access");
    expect(all).toContain("2× NVIDIA H200 (sm 9.0)");
    expect(all).toContain("/llm status gpu-1");
    expect(all).toContain("/llm rollback gpu-1");
    // finders of other messages look for "<host>:" and arrows; an alert must not match them
    expect(alert.text).not.toContain("gpu-1:");
    expect(alert.text).not.toContain("→");
  });

  it("stays within Slack's limits with a huge journal and eight GPUs, and says what it could not read", () => {
    const huge = Array.from({ length: 400 }, (_, i) => `line ${i} ${"x".repeat(500)} \`\`\` <@U123>`);
    const alert = renderAlert({
      ...base,
      journalTail: huge,
      gpus: Array.from({ length: 8 }, (_, i) => gpu(i)),
    });
    expect(alert.blocks.length).toBeLessThanOrEqual(LIMITS.blocks);
    for (const block of alert.blocks) {
      if (block.type === "section" && block.text !== undefined) {
        expect(block.text.text.length).toBeLessThanOrEqual(LIMITS.sectionText);
      }
    }
    const blind = renderAlert({
      ...base,
      model: undefined,
      journalTail: [],
      journalProblem: "the SSH connection to gpu-1 failed",
      gpus: [],
      gpuProblem: "nvidia-smi did not finish within 30 s",
    });
    const all = JSON.stringify(blind.blocks);
    expect(all).toContain("_unknown_");
    expect(all).toContain("the SSH connection to gpu-1 failed");
    expect(all).toContain("nvidia-smi did not finish within 30 s");
  });
});

describe("renderRecovery and formatOutage", () => {
  it("gives the outage's length", () => {
    const recovery = renderRecovery({
      host: "gpu-1",
      model: "Qwen/Qwen3-8B-FP8",
      unit: "sglang-gpu-1.service",
      since: new Date("2026-11-29T22:19:18Z"),
      recoveredAt: new Date("2026-11-29T22:31:50Z"),
    });
    expect(recovery.text).toBe("✅ gpu-1 is serving again after an outage of 12 min 32 s");
    expect(JSON.stringify(recovery.blocks)).toContain("down since 2026-11-29 22:19:18 UTC");
  });

  it.each([
    [0, "0 s"],
    [59_400, "59 s"],
    [60_000, "1 min"],
    [754_000, "12 min 34 s"],
    [3_600_000, "1 h"],
    [7_500_000, "2 h 5 min"],
    [3 * 86_400_000 + 3_600_000, "3 d 1 h"],
  ])("formats %i ms as %s", (ms, text) => {
    expect(formatOutage(ms)).toBe(text);
  });
});

describe("modelOfUnit", () => {
  it("reads --served-model-name, else the model path's last two parts", () => {
    const unit = (args: string) =>
      `[Service]\nExecStart=/opt/venv/bin/python -m sglang.launch_server \\\n    ${args}\nRestart=on-failure\n`;
    expect(modelOfUnit(unit("--model-path /srv/models/x --served-model-name org/name --tp 8"))).toBe(
      "org/name",
    );
    expect(modelOfUnit(unit("--model-path=/srv/models/Qwen/Qwen3-8B-FP8/ --tp 8"))).toBe("Qwen/Qwen3-8B-FP8");
    expect(modelOfUnit("[Service]\nType=simple\n")).toBeUndefined();
  });

  it("reads a vLLM unit's model from `serve <model>` (it has no --model-path)", () => {
    const vllm =
      "[Service]\nExecStart=/opt/venv/bin/python -m vllm.entrypoints.cli.main serve /srv/models/Qwen/Qwen3-8B-FP8 \\\n    --port 30000\n";
    expect(modelOfUnit(vllm)).toBe("Qwen/Qwen3-8B-FP8");
  });
});

/** A transport that answers one canned result (or throws), for the check's parsing. */
function canned(answer: Partial<ExecResult> | Error): Pick<HostTransport, "exec"> & { commands: string[] } {
  const commands: string[] = [];
  return {
    commands,
    async exec(command: ShellCommand) {
      commands.push(command.text);
      if (answer instanceof Error) throw answer;
      return { code: 0, signal: null, stdout: "", stderr: "", durationMs: 1, ...answer };
    },
  };
}

describe("checkHealth", () => {
  const target = { unit: "sglang-gpu-1.service", port: 30000, engine: sglangEngine };

  it("passes when the unit is active and /health_generate answers 200", async () => {
    const transport = canned({ stdout: "active\n__modelswap_unit_rc=0\n200\n__modelswap_curl_rc=0\n" });
    const result = await checkHealth(transport, target, 10);
    expect(result).toMatchObject({ ok: true, unitState: "active", httpStatus: 200, failure: undefined });
    expect(transport.commands[0]).toContain("systemctl is-active sglang-gpu-1.service");
    expect(transport.commands[0]).toContain("--max-time 10");
    expect(transport.commands[0]).toContain("http://127.0.0.1:30000/health_generate");
  });

  it("names each failing part", async () => {
    const failed = await checkHealth(
      canned({ stdout: "failed\n__modelswap_unit_rc=3\n000\n__modelswap_curl_rc=7\n" }),
      target,
      10,
    );
    expect(failed.failure).toBe(
      "`sglang-gpu-1.service` is failed; /health_generate: connection refused (nothing listens on the serving port)",
    );
    const hung = await checkHealth(
      canned({ stdout: "active\n__modelswap_unit_rc=0\n000\n__modelswap_curl_rc=28\n" }),
      target,
      2.5,
    );
    expect(hung.failure).toBe("/health_generate timed out after 2.5 s");
    const loading = await checkHealth(
      canned({ stdout: "active\n__modelswap_unit_rc=0\n503\n__modelswap_curl_rc=0\n" }),
      target,
      10,
    );
    expect(loading).toMatchObject({
      ok: false,
      httpStatus: 503,
      failure: "/health_generate answered HTTP 503",
    });
  });

  it("turns an unreachable host into a failed check, never a throw", async () => {
    const result = await checkHealth(
      canned(new CodedError("HOST_UNREACHABLE", "gpu-1 (10.0.0.5:22): connect ECONNREFUSED", "start sshd")),
      target,
      10,
    );
    expect(result.ok).toBe(false);
    expect(result.failure).toBe("the host could not be reached: gpu-1 (10.0.0.5:22): connect ECONNREFUSED");
    expect(result.unreachable).toEqual({
      code: "HOST_UNREACHABLE",
      message: "gpu-1 (10.0.0.5:22): connect ECONNREFUSED",
      fix: "start sshd",
    });
  });
});
