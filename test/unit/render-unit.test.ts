import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  newUnitName,
  renderUnit,
  systemdWord,
  type UnitSpec,
  unitNameFor,
} from "../../src/engine/render-unit.ts";
import { makePlan } from "../../src/plan/make-plan.ts";
import type { FlagChoice } from "../../src/plan/types.ts";
import {
  expandSpecifiers,
  interpretUnit,
  parseUnitText,
  splitWords,
} from "../../testbench/gpu-host/shims/unit-file.mjs";
import { tempDir } from "../support/tmp.ts";
import { planInput } from "./plan-fixtures.ts";

/**
 * The rendered unit is checked by systemd itself (`systemd-analyze verify`), which is required: a
 * missing systemd-analyze fails these tests rather than skipping them.
 */
const SYSTEMD_ANALYZE = "systemd-analyze";

let dir: { path: string; remove: () => Promise<void> };
/** A venv whose path needs quoting (space, %, $), with an executable python, as verify demands. */
let venv: string;

beforeAll(async () => {
  const probe = spawnSync(SYSTEMD_ANALYZE, ["--version"], { encoding: "utf8" });
  if (probe.error !== undefined || probe.status !== 0) {
    throw new Error(
      `systemd-analyze is required to verify rendered units (Debian/Ubuntu: apt-get install systemd): ${probe.error?.message ?? probe.stderr}`,
    );
  }
  dir = await tempDir("modelswap-unit-");
  venv = join(dir.path, "engine venv %i $HOME");
  mkdirSync(join(venv, "bin"), { recursive: true });
  writeFileSync(join(venv, "bin", "python"), "#!/bin/sh\nexit 0\n");
  chmodSync(join(venv, "bin", "python"), 0o755);
});
afterAll(() => dir?.remove());

/** Runs systemd-analyze verify on unit texts (one call for all); returns its exit status and output. */
function verify(units: readonly { name: string; text: string }[]): { status: number | null; output: string } {
  const files = units.map((unit, i) => {
    const sub = join(dir.path, `u${i}`);
    mkdirSync(sub, { recursive: true });
    const file = join(sub, unit.name);
    writeFileSync(file, unit.text);
    return file;
  });
  const run = spawnSync(SYSTEMD_ANALYZE, ["verify", ...files], { encoding: "utf8" });
  if (run.error !== undefined) throw run.error;
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

const choice = (setting: string, value: string | undefined): FlagChoice => ({
  setting,
  flag: `--${setting}`,
  value,
  reason: "test",
});

function spec(repo: string, overrides: Partial<UnitSpec> = {}): UnitSpec {
  return {
    repo,
    sha: "43da92d546abdfe33cded301c28224a774a893b9",
    swapId: "sw-1",
    serving: "sglang-old.service",
    kind: "sglang",
    venv,
    flags: [
      choice("model-path", `/models/${repo.replace("/", "--")}--43da92d546ab`),
      choice("served-model-name", repo),
      choice("tp-size", "8"),
      choice("trust-remote-code", undefined),
    ],
    timeoutStartSeconds: 1320,
    ...overrides,
  };
}

/**
 * argv as systemd builds it from an ExecStart= value (no prefixes, empty environment): specifiers
 * expanded in the whole line, words split with quotes and C escapes, then, in the arguments only,
 * variables expanded left to right (`$$` is a literal `$`; `${X}` and a whole-word `$X` are replaced).
 */
function systemdArgv(value: string): string[] {
  const words = splitWords(expandSpecifiers(value, "x.service"));
  return words.map(({ text, quoted }, i) => {
    if (i === 0) return text;
    if (!quoted && /^\$[A-Za-z_][A-Za-z0-9_]*$/.test(text)) return "";
    return text.replace(/\$(\$|\{[A-Za-z_][A-Za-z0-9_]*\})/g, (m) => (m === "$$" ? "$" : ""));
  });
}

/** What the unit must contain, whatever the input: these sections and keys, once each. */
const SERVICE_KEYS = [
  "Environment",
  "ExecStart",
  "Restart",
  "RestartSec",
  "TimeoutStartSec",
  "TimeoutStopSec",
  "Type",
].sort();

function expectWellFormed(text: string, repo: string, words: string[]): void {
  const { sections } = parseUnitText(text);
  expect(Object.keys(sections).sort()).toEqual(["Install", "Service", "Unit"]);
  expect(Object.keys(sections.Unit!).sort()).toEqual(["After", "Description", "Wants"]);
  expect(Object.keys(sections.Service!).sort()).toEqual(SERVICE_KEYS);
  expect(Object.keys(sections.Install!)).toEqual(["WantedBy"]);
  expect(sections.Service!.ExecStart).toHaveLength(1);
  expect(sections.Service!.Environment).toEqual(["HF_HUB_OFFLINE=1", "PYTHONUNBUFFERED=1"]);
  expect(systemdArgv(sections.Service!.ExecStart![0]!)).toEqual(words);
  const description = expandSpecifiers(sections.Unit!.Description![0]!, "x.service");
  const oneLine = repo.replace(/[\u0000-\u001f\u007f\u0085\u2028\u2029]/g, "?");
  expect(description).toBe(`SGLang serving ${oneLine}@43da92d (modelswap)`);
}

describe("unitNameFor", () => {
  const SHA = "43da92d546abdfe33cded301c28224a774a893b9";
  it("slugs the whole repo id and adds the commit", () => {
    expect(unitNameFor("nvidia/Qwen3.5-397B-A17B-NVFP4", SHA, "sglang")).toBe(
      "sglang-nvidia-qwen3-5-397b-a17b-nvfp4-43da92d.service",
    );
    expect(unitNameFor("moonshotai/Kimi-K2-Thinking", SHA, "sglang")).toBe(
      "sglang-moonshotai-kimi-k2-thinking-43da92d.service",
    );
  });

  it("tells apart another org's model of the same name, and another revision of the same repo", () => {
    const names = new Set([
      unitNameFor("sim-org/open-llama-1B", SHA, "sglang"),
      unitNameFor("other-org/open-llama-1B", SHA, "sglang"),
      unitNameFor("other-org/open-llama-1B", "7ce29ad0d1b2c3d4e5f60718293a4b5c6d7e8f90", "sglang"),
    ]);
    expect(names.size).toBe(3);
  });

  it("never names the new unit after the one serving now (the same repo and commit served again)", () => {
    const serving = unitNameFor("org/model", SHA, "sglang");
    expect(newUnitName("org/model", SHA, "sw-mx2i7lz1-34a1fc", serving, "sglang")).toBe(
      "sglang-org-model-43da92d-34a1fc.service",
    );
    expect(newUnitName("org/model", SHA, "sw-mx2i7lz1-34a1fc", "sglang-other.service", "sglang")).toBe(
      serving,
    );
    expect(renderUnit(spec("org/model", { serving })).name).not.toBe(serving);
  });

  it("keeps long names within 60 characters and apart", () => {
    const a = unitNameFor(`org/${"Very-Long-Model-Name-".repeat(5)}A`, SHA, "sglang");
    const b = unitNameFor(`org/${"Very-Long-Model-Name-".repeat(5)}B`, SHA, "sglang");
    expect(a.length).toBeLessThanOrEqual(60);
    expect(a).not.toBe(b);
    expect(a).toMatch(/^sglang-org-very-long-model-name-.*-[0-9a-f]{6}-43da92d\.service$/);
  });

  it("is never empty, and only [a-z0-9-] between prefix and suffix, for any name", () => {
    expect(unitNameFor("!!!/!!!", SHA, "sglang")).toMatch(/^sglang-model-[0-9a-f]{6}-43da92d\.service$/);
    fc.assert(
      fc.property(
        fc.string({ unit: "binary", maxLength: 200 }),
        fc.string({ maxLength: 50 }),
        (name, sha) => {
          const unit = unitNameFor(`org/${name}`, sha, "sglang");
          expect(unit).toMatch(/^sglang-[a-z0-9]+(-[a-z0-9]+)*\.service$/);
          expect(unit.length).toBeLessThanOrEqual(60);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("systemdWord", () => {
  it("leaves plain words alone and quotes the rest systemd's way", () => {
    expect(systemdWord("/models/a--b--0123")).toBe("/models/a--b--0123");
    expect(systemdWord("nvidia/Qwen3.5")).toBe("nvidia/Qwen3.5");
    expect(systemdWord("a b")).toBe('"a b"');
    expect(systemdWord('say "hi"')).toBe('"say \\"hi\\""');
    expect(systemdWord("100%")).toBe('"100%%"');
    expect(systemdWord("$HOME")).toBe('"$$HOME"');
    expect(systemdWord("back\\slash")).toBe('"back\\\\slash"');
    expect(systemdWord("two\nlines")).toBe('"two\\nlines"');
    expect(systemdWord("bell\u0007")).toBe('"bell\\x07"');
    expect(systemdWord(";")).toBe('";"');
    expect(systemdWord("")).toBe('""');
    expect(() => systemdWord("nul\0")).toThrow(/NUL/);
  });
});

describe("renderUnit", () => {
  it("renders the Qwen3.5 plan's unit, which systemd-analyze verify accepts without a warning", () => {
    const plan = makePlan(planInput("qwen3.5-moe-nvfp4", "8x-rtx-pro-6000-blackwell"));
    const unit = renderUnit({
      repo: plan.model.repo,
      sha: plan.model.sha,
      swapId: plan.swapId,
      serving: plan.host.currentUnit.name,
      kind: plan.engineKind,
      venv,
      flags: plan.flags,
      timeoutStartSeconds: plan.healthTimeoutSeconds,
    });
    expect(unit.name).toBe(plan.unitName);
    const result = verify([unit]);
    expect(result.output).toBe("");
    expect(result.status).toBe(0);

    const text = unit.text;
    expect(text).toContain("# Written by modelswap for swap sw-20261129-0001;");
    expect(text).toContain(
      `Description=SGLang serving nvidia/Qwen3.5-397B-A17B-NVFP4@${plan.model.sha.slice(0, 7)} (modelswap)\n`,
    );
    expect(text).toContain("Environment=HF_HUB_OFFLINE=1\n");
    expect(text).toContain("Restart=on-failure\nRestartSec=10\nTimeoutStartSec=1200\n");
    expect(text).toContain("[Install]\nWantedBy=multi-user.target\n");
    const interpreted = interpretUnit(text, `/etc/systemd/system/${unit.name}`, unit.name);
    expect(interpreted.execStart?.path).toBe(join(venv, "bin", "python"));
    expect(interpreted.execStart?.argv.slice(1, 3)).toEqual(["-m", "sglang.launch_server"]);
    expect(interpreted.execStart?.argv).toContain("--fp4-gemm-backend");
    expect(interpreted.restartMs).toBe(10_000);
    expect(interpreted.timeoutStartMs).toBe(1_200_000);
    expect(interpreted.wantedBy).toEqual(["multi-user.target"]);
  });

  it("is verified broken when it is broken (the check is real)", () => {
    const good = renderUnit(spec("org/model"));
    const unbalanced = verify([
      { name: "bad.service", text: good.text.replace(/^ExecStart=.*$/m, 'ExecStart="unbalanced') },
    ]);
    expect(unbalanced.status).not.toBe(0);
    expect(unbalanced.output).toMatch(/Unbalanced quoting/);
    const missing = verify([
      {
        name: "bad2.service",
        text: good.text.replace(/^ExecStart="[^"]*"/m, "ExecStart=/nonexistent/python"),
      },
    ]);
    expect(missing.output).toMatch(/Command \/nonexistent\/python is not executable/);
    const injected = verify([
      { name: "bad3.service", text: `${good.text}[Service]\nExecStartPre=/nonexistent/x\n` },
    ]);
    expect(injected.output).toMatch(/nonexistent\/x/);
  });

  it("leaves out a flag the engine has no spelling for, and uses --flag=value for values that look like options", () => {
    const unit = renderUnit(
      spec("org/model", {
        flags: [
          { setting: "fp4-gemm-backend", flag: undefined, value: "flashinfer_cudnn", reason: "x" },
          choice("served-model-name", "-looks-like-an-option"),
        ],
      }),
    );
    expect(unit.text).not.toContain("flashinfer_cudnn");
    const exec = parseUnitText(unit.text).sections.Service!.ExecStart![0]!;
    expect(systemdArgv(exec).slice(3)).toEqual(["--served-model-name=-looks-like-an-option"]);
  });

  it("refuses a relative venv", () => {
    expect(() => renderUnit(spec("org/model", { venv: "venv" }))).toThrow(/absolute/);
  });

  const hostileChar = fc.constantFrom(
    '"',
    "'",
    "%",
    "$",
    "\\",
    " ",
    "\n",
    "\r",
    "\t",
    ";",
    "#",
    "[",
    "]",
    "=",
    "`",
    "{",
    "}",
    "%n",
    "$" + "{X}",
    "$$",
    "a",
    "Z",
    "9",
    "-",
    ".",
    "/",
    "é",
    "量",
    "🚀",
    "\u2028",
    "ExecStartPre=/bin/false",
    "[Service]",
  );
  const hostileName = fc.array(hostileChar, { minLength: 1, maxLength: 24 }).map((parts) => parts.join(""));

  it("keeps hostile model names inside their words: nothing injected, every argument read back exactly", () => {
    fc.assert(
      fc.property(hostileName, hostileName, (name, value) => {
        const repo = `org/${name}`;
        const unit = renderUnit(
          spec(repo, {
            swapId: `sw-${value}`,
            flags: [choice("served-model-name", repo), choice("reasoning-parser", value)],
          }),
        );
        const words = [
          join(venv, "bin", "python"),
          "-m",
          "sglang.launch_server",
          "--served-model-name",
          repo,
        ];
        words.push(
          ...(value.startsWith("-") ? [`--reasoning-parser=${value}`] : ["--reasoning-parser", value]),
        );
        expectWellFormed(unit.text, repo, words);
        expect(unit.text.split("\n").filter((l) => /^\[.*\]$/.test(l))).toEqual([
          "[Unit]",
          "[Service]",
          "[Install]",
        ]);
      }),
      { numRuns: 400 },
    );
  });

  it("systemd-analyze verify accepts every hostile unit without a warning", () => {
    const units = fc.sample(
      fc.tuple(hostileName, fc.string({ unit: "binary", maxLength: 40 })).map(([name, noise]) =>
        renderUnit(
          spec(`org/${name}`, {
            flags: [
              choice("served-model-name", `org/${name}`),
              choice("tool-call-parser", noise.replaceAll("\0", "")),
            ],
          }),
        ),
      ),
      { numRuns: 150, seed: 20261129 },
    );
    const result = verify(units);
    expect(result.output).toBe("");
    expect(result.status).toBe(0);
    for (const unit of units) expect(unit.text).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
  });
});
