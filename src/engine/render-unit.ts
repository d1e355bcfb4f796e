import { createHash } from "node:crypto";
import { ENGINE_NAMES, type EngineKind } from "./engine.ts";
import { engineFor } from "./engines.ts";

/** One flag of the unit, as the plan chose it (the plan's FlagChoice): `flag` undefined is left out. */
export interface UnitFlag {
  flag?: string;
  /** undefined for boolean flags. */
  value?: string;
  /** The command's positional argument (vLLM's `serve <model>`): the value alone, right after the entry point. */
  positional?: boolean;
}

/** One environment variable of the unit, and why (the plan's EnvChoice). */
export interface UnitEnv {
  name: string;
  value: string;
  reason: string;
}

/**
 * The systemd unit that serves a model with SGLang or vLLM. Every value that comes from outside (model names,
 * paths, flag values) is written so systemd reads it back unchanged and it can never start a new
 * line, section or directive: ExecStart words use systemd's quoting (systemd.service(5), "Command
 * lines": double quotes, C escapes, `%%` for specifiers, `$$` for variables); Description and comments
 * lose control characters.
 */
export interface UnitSpec {
  /** The engine that serves: its entry point, import path and unit names. */
  kind: EngineKind;
  repo: string;
  sha: string;
  swapId: string;
  /** The unit serving now: the new one never takes its name. */
  serving: string;
  /** Absolute path of the engine's venv. */
  venv: string;
  /**
   * The engine build this unit runs: its directory (the unit imports `sglang` from `<dir>/python`, ahead
   * of whatever the venv has installed) and, for the comment, where it came from. Absent: the venv's own.
   */
  engine?: { buildDir: string; describe: string; reused?: boolean };
  /** Flags in order; a flag the engine has no spelling for (`flag` undefined) is left out. */
  flags: readonly UnitFlag[];
  /** The recipe's environment variables (engine switches it reads only from there). */
  env?: readonly UnitEnv[];
  /** TimeoutStartSec (the plan's health timeout, which scales with the weights' size). */
  timeoutStartSeconds: number;
  /**
   * The longest drain of requests in flight when the unit stops (SGLang drains on SIGTERM with no cap of
   * its own): TimeoutStopSec is this plus STOP_MARGIN_SECONDS. Absent: TimeoutStopSec=120, as before.
   */
  drainSeconds?: number;
  /**
   * The physical GPUs the unit may use (CUDA_VISIBLE_DEVICES), when it runs beside another unit
   * (blue/green). Absent: every GPU, as before.
   */
  visibleDevices?: readonly number[];
}

/** TimeoutStopSec beyond the drain: the process tree's own exit after its last request. */
export const STOP_MARGIN_SECONDS = 30;

/**
 * How long systemd lets a unit take to stop, from its file: TimeoutStopSec= in plain seconds (as
 * modelswap writes it, or `…s`), else systemd's DefaultTimeoutStopSec, 90 s. A value in another form
 * (`2min 30s`) reads as 600 s: long enough to wait for, never too short.
 */
export function stopTimeoutSeconds(unitText: string): number {
  const values = [...unitText.matchAll(/^TimeoutStopSec=(.*)$/gm)].map((m) => (m[1] ?? "").trim());
  const last = values.at(-1);
  if (last === undefined || last === "") return 90;
  const plain = /^(\d+)s?$/.exec(last);
  return plain === null ? 600 : Number(plain[1]);
}

const MAX_NAME = 60;
const SUFFIX = ".service";

/**
 * `sglang-<org>-<name>-<sha7>.service` (`vllm-…` for vLLM): the whole repo id and the commit, so another org's model of the
 * same name, or another revision of the same repo, never gets the same unit (it would overwrite the file
 * of the unit serving it). Lowercase letters, digits and dashes, at most 60 characters in all (a long id
 * is cut and keeps a short hash of it, so two long ids stay apart); an id with nothing usable becomes
 * `sglang-model-<hash>-<sha7>.service`.
 */
export function unitNameFor(repo: string, sha: string, kind: EngineKind): string {
  const PREFIX = engineFor(kind).unitPrefix;
  const slug = repo
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "");
  const commit = `-${
    sha
      .toLowerCase()
      .replace(/[^a-z0-9]/g, "")
      .slice(0, 7) || "local"
  }`;
  const hash = createHash("sha256").update(repo).digest("hex").slice(0, 6);
  const room = MAX_NAME - PREFIX.length - SUFFIX.length - commit.length;
  if (slug === "") return `${PREFIX}model-${hash}${commit}${SUFFIX}`;
  if (slug.length <= room) return `${PREFIX}${slug}${commit}${SUFFIX}`;
  const cut = slug.slice(0, room - hash.length - 1).replace(/-+$/, "");
  return `${PREFIX}${cut}-${hash}${commit}${SUFFIX}`;
}

/**
 * The unit's name, never the one serving now: the same repo and commit served again (after a rollback,
 * say) gets the swap's own suffix, so the serving unit's file is never rewritten under it.
 */
export function newUnitName(
  repo: string,
  sha: string,
  swapId: string,
  serving: string,
  kind: EngineKind,
): string {
  const name = unitNameFor(repo, sha, kind);
  if (name !== serving) return name;
  return name.replace(SUFFIX, `-${swapId.slice(-6)}${SUFFIX}`);
}

const PLAIN_WORD = /^[A-Za-z0-9_@+=:,./-]+$/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * One word of an ExecStart= line, read back by systemd byte for byte. systemd expands specifiers
 * (`%%` → `%`) in every word but variables (`$$` → `$`) only in the arguments, not in the executable's
 * path, so `kind` says which this is. NUL cannot be in an argument.
 */
export function systemdWord(word: string, kind: "argument" | "executable" = "argument"): string {
  if (word.includes("\0")) throw new Error("a NUL byte cannot be passed as a command-line argument");
  if (PLAIN_WORD.test(word)) return word;
  let out = '"';
  for (const ch of word.replace(LONE_SURROGATE, "\uFFFD")) {
    const code = ch.codePointAt(0)!;
    if (ch === "%") out += "%%";
    else if (ch === "$" && kind === "argument") out += "$$";
    else if (ch === "\\") out += "\\\\";
    else if (ch === '"') out += '\\"';
    else if (ch === "\n") out += "\\n";
    else if (ch === "\t") out += "\\t";
    else if (ch === "\r") out += "\\r";
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, "0")}`;
    else out += ch;
  }
  return `${out}"`;
}

/** Text for Description= and comments: one line, no control characters; `%` doubled where systemd expands specifiers. */
function oneLine(text: string, specifiers: boolean): string {
  const clean = text
    .replace(LONE_SURROGATE, "\uFFFD")
    .replace(/[\u0000-\u001f\u007f\u0085\u2028\u2029]/g, "?");
  return specifiers ? clean.replaceAll("%", "%%") : clean;
}

/** `--flag value` (or `--flag=value` when the value starts with "-", which argparse would take for an option). */
function flagWords(choice: UnitFlag): string | undefined {
  if (choice.flag === undefined) return undefined;
  const flag = systemdWord(choice.flag);
  if (choice.value === undefined) return flag;
  if (choice.value.startsWith("-")) return systemdWord(`${choice.flag}=${choice.value}`);
  return `${flag} ${systemdWord(choice.value)}`;
}

/** An environment variable's name as systemd and the engine read it. */
const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;

export function renderUnit(spec: UnitSpec): { name: string; text: string } {
  if (!spec.venv.startsWith("/"))
    throw new Error(`the engine venv must be an absolute path, got "${spec.venv}"`);
  const { kind } = spec;
  const setup = engineFor(kind);
  const name = newUnitName(spec.repo, spec.sha, spec.swapId, spec.serving, kind);
  const python = systemdWord(`${spec.venv.replace(/\/+$/, "")}/bin/python`, "executable");
  // the positional argument (vLLM's model) right after the entry point, then the flags
  const positional = spec.flags
    .filter((f) => f.positional === true && f.value !== undefined)
    .map((f) => systemdWord(f.value!));
  const args = spec.flags
    .filter((f) => f.positional !== true)
    .map(flagWords)
    .filter((w): w is string => w !== undefined);
  const execStart = [[python, ...setup.entryPoint, ...positional].join(" "), ...args].join(" \\\n    ");
  const timeout = Math.max(1, Math.ceil(spec.timeoutStartSeconds));
  const engine: string[] = [];
  if (spec.engine !== undefined) {
    const path = setup.importPath(spec.engine.buildDir);
    // Environment= splits on spaces and expands specifiers, not variables: a plain path needs no quoting.
    if (!PLAIN_WORD.test(path)) throw new Error(`the engine build directory is not a plain path: "${path}"`);
    engine.push(
      `# Engine: ${oneLine(spec.engine.describe, false)}, ${spec.engine.reused === true ? "the build the unit serving before this swap ran, reused" : "built in a directory of its own"}.`,
      `Environment=PYTHONPATH=${path.replaceAll("%", "%%")}`,
    );
  }
  const lines = [
    `# Written by modelswap for swap ${oneLine(spec.swapId, false)}; later swaps write units of their own.`,
    `# Model: ${oneLine(spec.repo, false)} at commit ${oneLine(spec.sha, false)}.`,
    "[Unit]",
    `Description=${ENGINE_NAMES[kind]} serving ${oneLine(spec.repo, true)}@${oneLine(spec.sha.slice(0, 7), true)} (modelswap)`,
    "After=network-online.target",
    "Wants=network-online.target",
    "",
    "[Service]",
    "Type=simple",
    "# Start from the local files only: a restart never waits on (or fails because of) the Hub.",
    "Environment=HF_HUB_OFFLINE=1",
    "Environment=PYTHONUNBUFFERED=1",
    ...engine,
    ...envLines(spec.env ?? []),
    ...(spec.visibleDevices === undefined
      ? []
      : [
          "# Beside the unit it replaces (blue/green): only these GPUs, which CUDA numbers from 0.",
          `Environment=CUDA_VISIBLE_DEVICES=${spec.visibleDevices.map((d) => String(Math.trunc(d))).join(",")}`,
        ]),
    `ExecStart=${execStart}`,
    "Restart=on-failure",
    "RestartSec=10",
    `TimeoutStartSec=${timeout}`,
    `TimeoutStopSec=${spec.drainSeconds === undefined ? 120 : Math.ceil(spec.drainSeconds) + STOP_MARGIN_SECONDS}`,
    "",
    "[Install]",
    "WantedBy=multi-user.target",
    "",
  ];
  return { name, text: lines.join("\n") };
}

/**
 * The recipe's environment variables, each after a comment with its reason. Names are checked; values
 * are written in systemd's quoting (Environment= takes `"NAME=value"` with C escapes; `%` doubled for
 * specifiers), so a value can never start a new line or directive.
 */
function envLines(env: readonly UnitEnv[]): string[] {
  return env.flatMap((e, i) => {
    if (!ENV_NAME.test(e.name)) throw new Error(`not an environment variable name: "${e.name}"`);
    const word = systemdWord(`${e.name}=${e.value}`, "executable");
    // variables that share a reason (the compile caches) share its comment
    const same = i > 0 && env[i - 1]!.reason === e.reason;
    return [...(same ? [] : [`# ${oneLine(e.reason, false)}`]), `Environment=${word}`];
  });
}
