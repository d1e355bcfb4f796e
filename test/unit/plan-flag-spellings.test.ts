import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  applyFlagSpellings,
  defaultSpelling,
  parseHelpFlags,
  parseHelpOptions,
} from "../../src/plan/flag-spellings.ts";
import { makePlan } from "../../src/plan/make-plan.ts";
import type { SwapPlan } from "../../src/plan/types.ts";
import { sandboxPaths } from "../../testbench/gpu-host/shims/sandbox.mjs";
import {
  loadFlagSpecs,
  parseArgs,
  renderServerArgsPy,
} from "../../testbench/gpu-host/shims/sglang-flags.mjs";
import { interpretUnit } from "../../testbench/gpu-host/shims/unit-file.mjs";
import { tempDir } from "../support/tmp.ts";
import { planInput } from "./plan-fixtures.ts";

const PYTHON_SHIM = new URL("../../testbench/gpu-host/shims/python.mjs", import.meta.url).pathname;

let sandbox: { path: string; remove: () => Promise<void> };
beforeAll(async () => {
  sandbox = await tempDir("modelswap-flags-");
});
afterAll(() => sandbox.remove());

/**
 * `python -m sglang.launch_server --help` of a simulated engine build: a source tree whose
 * server_args.py is `serverArgsPy` (default: every current upstream flag), installed the way
 * `pip install -e python` leaves it (an `__editable__.sglang-<version>.pth` in the venv's site-packages
 * naming the project directory). Its --help lists that build's flags, as the real engine's reflects its
 * own source.
 */
function engineHelp(name: string, serverArgsPy = renderServerArgsPy()): string {
  const root = join(sandbox.path, name);
  const project = join(root, "opt", "sglang", "python");
  mkdirSync(join(project, "sglang", "srt"), { recursive: true });
  writeFileSync(join(project, "sglang", "__init__.py"), "");
  writeFileSync(join(project, "sglang", "version.py"), '__version__ = "0.5.2"\n');
  writeFileSync(join(project, "sglang", "srt", "server_args.py"), serverArgsPy);
  const site = sandboxPaths(root).sitePackagesDir;
  mkdirSync(site, { recursive: true });
  writeFileSync(join(site, "__editable__.sglang-0.5.2.pth"), `${project}\n`);
  return execFileSync(process.execPath, [PYTHON_SHIM, "-m", "sglang.launch_server", "--help"], {
    env: { ...process.env, MODELSWAP_SANDBOX: root, COLUMNS: "100" },
    encoding: "utf8",
  });
}

const flagOf = (plan: SwapPlan, setting: string) => plan.flags.find((f) => f.setting === setting);
const flagsCheck = (plan: SwapPlan) => plan.checks.find((c) => c.id === "flags");

describe("parseHelpFlags", () => {
  it("reads every option of the engine's real --help, aliases included", () => {
    const flags = parseHelpFlags(engineHelp("current"));
    for (const f of [
      "-h",
      "--help",
      "--model-path",
      "--model",
      "--tp-size",
      "--tensor-parallel-size",
      "--quantization",
      "--moe-runner-backend",
      "--fp4-gemm-backend",
      "--tool-call-parser",
      "--reasoning-parser",
      "--enable-hierarchical-cache",
      "--hicache-ratio",
      "--trust-remote-code",
      "--served-model-name",
    ]) {
      expect(flags.has(f), f).toBe(true);
    }
    expect(flags.size).toBeGreaterThan(100);
    expect([...flags].every((f) => /^-{1,2}[A-Za-z0-9][A-Za-z0-9_-]*$/.test(f))).toBe(true);
  });

  it("reads choices, and never takes a flag a description mentions for an option", () => {
    const help = [
      "usage: launch_server.py [-h] [--new-flag NEW_FLAG]",
      "",
      "options:",
      "  -h, --help            show this help message and exit",
      "  --new-flag NEW_FLAG   Replaces --old-flag, which older versions had.",
      "  --mode {a,b,c}        The mode. Use it with",
      "                        --other-flag for best results.",
      "  --very-long-option-name-that-wraps VERY_LONG_OPTION_NAME_THAT_WRAPS",
      "                        Description on its own line mentioning --ghost.",
      "",
    ].join("\n");
    expect([...parseHelpFlags(help)].sort()).toEqual(
      ["--help", "--mode", "--new-flag", "--very-long-option-name-that-wraps", "-h"].sort(),
    );
    expect(parseHelpOptions(help).get("--mode")).toEqual(["a", "b", "c"]);
    expect(parseHelpOptions(help).get("--new-flag")).toBeUndefined();
  });
});

describe("applyFlagSpellings", () => {
  const plan = makePlan(planInput("qwen3.5-moe-nvfp4", "8x-rtx-pro-6000-blackwell"));

  it("before the build, flags carry the current upstream spellings", () => {
    expect(defaultSpelling("tp-size")).toBe("--tp-size");
    expect(defaultSpelling("fp4-gemm-backend")).toBe("--fp4-gemm-backend");
    expect(defaultSpelling("some-new-setting")).toBe("--some-new-setting");
    expect(flagsCheck(plan)).toBeUndefined();
  });

  it("keeps current spellings on a current engine and adds a passing flags check", () => {
    const help = engineHelp("current-2");
    const spelled = applyFlagSpellings(plan, parseHelpFlags(help), parseHelpOptions(help));
    expect(flagsCheck(spelled)).toMatchObject({ ok: true });
    expect(spelled.ok).toBe(true);
    expect(spelled.flags).toEqual(plan.flags);
    expect(spelled.unitText).toBe(plan.unitText);
  });

  it("writes an ExecStart that the engine's own argument parser accepts", () => {
    const unit = interpretUnit(plan.unitText, plan.unitPath, plan.unitName);
    expect(unit.execStart?.argv.slice(0, 3)).toEqual([
      "/opt/sglang/.venv/bin/python",
      "-m",
      "sglang.launch_server",
    ]);
    const { specs } = loadFlagSpecs(null);
    const parsed = parseArgs(specs, unit.execStart!.argv.slice(3));
    expect(parsed.values).toMatchObject({
      model_path: plan.modelDir,
      tp_size: 8,
      quantization: "modelopt_fp4",
      moe_runner_backend: "flashinfer_cutlass",
      fp4_gemm_runner_backend: "flashinfer_cudnn",
      tool_call_parser: "qwen3_coder",
      reasoning_parser: "qwen3",
      enable_hierarchical_cache: true,
      host: "127.0.0.1",
      port: 30000,
    });
  });

  it("fails the flags check, naming the setting, on an engine build without --fp4-gemm-backend", () => {
    const help = engineHelp("old-engine", renderServerArgsPy({ omit: ["--fp4-gemm-backend"] }));
    expect(help).toContain("--moe-runner-backend");
    expect(help).not.toContain("--fp4-gemm-backend");
    const spelled = applyFlagSpellings(plan, parseHelpFlags(help));
    expect(spelled.ok).toBe(false);
    const check = flagsCheck(spelled);
    expect(check).toMatchObject({ ok: false });
    expect(check?.detail).toMatch(/no flag for fp4-gemm-backend/);
    expect(check?.detail).not.toMatch(/moe-runner-backend/);
    expect(check?.fix).toMatch(/build an engine that has it: --engine-ref <newer ref>/);
    expect(flagOf(spelled, "fp4-gemm-backend")).toMatchObject({ flag: undefined, value: "flashinfer_cudnn" });
    expect(spelled.unitText).not.toContain("fp4-gemm");
    // Spelling again on a newer build restores it.
    const newer = applyFlagSpellings(spelled, parseHelpFlags(engineHelp("current-3")));
    expect(newer.ok).toBe(true);
    expect(newer.unitText).toBe(plan.unitText);
    expect(newer.checks.filter((c) => c.id === "flags")).toHaveLength(1);
  });

  it("uses an older spelling when the build has that instead", () => {
    const help = engineHelp(
      "renamed",
      renderServerArgsPy({ omit: ["--fp4-gemm-backend"], add: ["--fp4-gemm-runner-backend"] }),
    );
    const spelled = applyFlagSpellings(plan, parseHelpFlags(help));
    expect(flagsCheck(spelled)?.ok).toBe(true);
    expect(flagOf(spelled, "fp4-gemm-backend")).toMatchObject({
      flag: "--fp4-gemm-runner-backend",
      value: "flashinfer_cudnn",
    });
    expect(spelled.unitText).toContain("--fp4-gemm-runner-backend flashinfer_cudnn");
  });

  it("maps a choice to an old boolean flag (--enable-flashinfer-cutlass-moe) and back", () => {
    const help = engineHelp(
      "before-moe-runner-backend",
      renderServerArgsPy({ omit: ["--moe-runner-backend"], add: ["--enable-flashinfer-cutlass-moe"] }),
    );
    const old = applyFlagSpellings(plan, parseHelpFlags(help));
    expect(flagsCheck(old)?.ok).toBe(true);
    expect(flagOf(old, "moe-runner-backend")).toMatchObject({
      flag: "--enable-flashinfer-cutlass-moe",
      value: undefined,
    });
    expect(old.unitText).toMatch(/--enable-flashinfer-cutlass-moe \\\n/);
    const back = applyFlagSpellings(old, parseHelpFlags(engineHelp("current-4")));
    expect(flagOf(back, "moe-runner-backend")).toMatchObject({
      flag: "--moe-runner-backend",
      value: "flashinfer_cutlass",
    });
  });

  it("spells tp as the build does (--tensor-parallel-size only)", () => {
    const spelled = applyFlagSpellings(
      plan,
      new Set([...parseHelpFlags(engineHelp("current-5"))].filter((f) => f !== "--tp-size")),
    );
    expect(flagOf(spelled, "tp-size")?.flag).toBe("--tensor-parallel-size");
  });

  it("fails when the build's choices lack the recipe's value (an engine without the qwen3_coder parser)", () => {
    const help = engineHelp("current-6").replace(/(--tool-call-parser \{[^}]*?)qwen3_coder,/g, "$1");
    const spelled = applyFlagSpellings(plan, parseHelpFlags(help), parseHelpOptions(help));
    expect(spelled.ok).toBe(false);
    expect(flagsCheck(spelled)?.detail).toMatch(
      /--tool-call-parser does not accept qwen3_coder \(it takes .*qwen25/,
    );
  });
});
