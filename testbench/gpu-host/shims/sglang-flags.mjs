/**
 * Imitates: the argparse command line of `python -m sglang.launch_server` (SGLang's ServerArgs):
 * real flag spellings, aliases, choices and types; Python 3.12 argparse behaviour (unique-prefix
 * abbreviations such as `--tp`, `--flag=value`, `unrecognized arguments` / `invalid choice` /
 * `the following arguments are required` errors with exit 2) and `--help` output.
 *
 * Which flags exist: when <project>/sglang/srt/server_args.py of the installed engine exists
 * (<project> is the directory of `pip install -e`, e.g. <engine source>/python), the `"--xxx"` string
 * literals in it plus the `field: A[...]` dataclass fields (kebab-cased) of the current upstream
 * style; otherwise the built-in list (sglang-flag-table.mjs: current upstream spellings).
 *
 * The argparse emulation is in sglang-argparse.mjs; this module re-exports it.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { BUILTIN_BY_FLAG, BUILTIN_FLAGS } from "./sglang-flag-table.mjs";

export { ArgError, formatHelp, formatUsage, parseArgs, pyValue } from "./sglang-argparse.mjs";
export { BUILTIN_BY_FLAG, BUILTIN_FLAGS };

/** @typedef {import("./sglang-flag-table.mjs").FlagSpec} FlagSpec */

/** Flags that some upstream versions spelled differently: any of them means the same setting. */
const SEMANTIC_ALIASES = {
  fp4_gemm_runner_backend: ["--fp4-gemm-backend", "--fp4-gemm-runner-backend"],
  fp8_gemm_runner_backend: ["--fp8-gemm-backend", "--fp8-gemm-runner-backend"],
};

/**
 * The flag set of the engine: from `<projectDir>/sglang/srt/server_args.py` when present, else the
 * built-in list. `projectDir` is the installed engine's project directory (holding `sglang/`).
 * @param {string | null} projectDir
 * @returns {{specs: FlagSpec[], source: string}}
 */
export function loadFlagSpecs(projectDir) {
  const file = projectDir ? join(projectDir, "sglang", "srt", "server_args.py") : null;
  if (!file || !existsSync(file)) return { specs: BUILTIN_FLAGS, source: "builtin" };
  const text = readFileSync(file, "utf8");
  const names = new Set();
  for (const m of text.matchAll(/["'](--[A-Za-z0-9][A-Za-z0-9_-]*)["']/g)) names.add(m[1]);
  for (const m of text.matchAll(/^ {4}([a-z][a-z0-9_]*)\s*:\s*A\[/gm))
    names.add(`--${m[1].replaceAll("_", "-")}`);
  names.delete("--help");
  /** @type {FlagSpec[]} */
  const specs = [];
  const used = new Set();
  // Keep built-in alias groups together when every member of the group is present.
  for (const builtin of BUILTIN_FLAGS) {
    const present = builtin.flags.filter((flag) => names.has(flag));
    if (present.length === 0) continue;
    specs.push({
      ...builtin,
      flags: present,
      required: builtin.required && present.includes(builtin.flags[0]),
    });
    for (const flag of present) used.add(flag);
  }
  for (const name of names) {
    if (used.has(name)) continue;
    specs.push({
      flags: [name],
      dest: name.replace(/^--/, "").replaceAll("-", "_"),
      type: guessType(name),
      help: undefined,
      default: null,
    });
  }
  return { specs, source: file };
}

/** @param {string} name */
function guessType(name) {
  if (/^--(enable|disable|skip|trust|use|allow|no|is|show|keep|delete|force)-/.test(name)) return "bool";
  return "unknown";
}

/**
 * Reads a setting by its canonical dest, accepting older/newer spellings of the same flag.
 * @param {Record<string, unknown>} values
 * @param {string} dest
 */
export function setting(values, dest) {
  if (values[dest] !== undefined && values[dest] !== null) return values[dest];
  for (const flag of SEMANTIC_ALIASES[dest] ?? []) {
    const alt = flag.replace(/^--/, "").replaceAll("-", "_");
    if (values[alt] !== undefined && values[alt] !== null) return values[alt];
  }
  return null;
}

/**
 * Renders a Python `server_args.py` in the classic argparse style declaring the built-in flags,
 * so a simulated engine source tree can carry a flag set the simulated server then honours.
 * `omit` drops flags (any spelling of a group drops the whole group); `add` declares extra
 * flags (a `store_true` flag when the name starts with --enable-/--disable-, else a string).
 * @param {{omit?: string[], add?: string[]}} [options]
 * @returns {string}
 */
export function renderServerArgsPy(options = {}) {
  const omit = new Set(options.omit ?? []);
  const lines = [
    '"""The arguments of the server (simulated engine source for the modelswap test bench)."""',
    "",
    "import argparse",
    "",
    "",
    "def add_cli_args(parser: argparse.ArgumentParser):",
  ];
  const q = (/** @type {unknown} */ v) => (typeof v === "string" ? JSON.stringify(v) : String(v));
  for (const spec of BUILTIN_FLAGS) {
    if (spec.flags.some((flag) => omit.has(flag))) continue;
    const names = spec.flags.map((flag) => JSON.stringify(flag)).join(", ");
    const parts = [names];
    if (spec.type === "bool") parts.push('action="store_true"');
    else if (spec.type === "int") parts.push("type=int");
    else if (spec.type === "float") parts.push("type=float");
    else if (spec.type === "list") parts.push('nargs="*"');
    else parts.push("type=str");
    if (spec.dest !== spec.flags[0].replace(/^--/, "").replaceAll("-", "_"))
      parts.push(`dest=${JSON.stringify(spec.dest)}`);
    if (spec.required) parts.push("required=True");
    if (spec.choices) parts.push(`choices=[${spec.choices.map(q).join(", ")}]`);
    if (spec.help) parts.push(`help=${JSON.stringify(spec.help)}`);
    lines.push(`    parser.add_argument(${parts.join(", ")})`);
  }
  for (const flag of options.add ?? []) {
    const kind = /^--(enable|disable)-/.test(flag) ? 'action="store_true"' : "type=str";
    lines.push(`    parser.add_argument(${JSON.stringify(flag)}, ${kind})`);
  }
  lines.push("");
  return `${lines.join("\n")}\n`;
}
