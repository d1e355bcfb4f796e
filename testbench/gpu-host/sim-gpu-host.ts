import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { dfFastPath } from "./df-fast-path.ts";
import { ENGINE_PREINSTALLED, engineDistribution, writeEngineTree } from "./engine-tree.ts";
import { freeFastPath } from "./free-fast-path.ts";
import { hfFastPath } from "./hf-fast-path.ts";
import { journalctlTailFastPath } from "./journalctl-fast-path.ts";
import { nvidiaSmiFastPath } from "./nvidia-smi-fast-path.ts";
import { pythonFastPath } from "./python-fast-path.ts";
import {
  isAlive,
  processGroupAlive,
  readJsonFile,
  sandboxPaths,
  sleep,
  writeJsonAtomic,
} from "./shims/sandbox.mjs";
import { runSystemctl } from "./shims/systemctl-main.mjs";
import { parseSystemctlArgs } from "./shims/systemctl-options.mjs";
import { importableSglang, readStackState, type StackState, writeEditableInstall } from "./shims/venv.mjs";
import { systemctlFastPath } from "./systemctl-fast-path.ts";
import { shimScriptPath, writePassthroughWrapper, writeShimWrapper } from "./write-shim-wrapper.ts";

export type GpuSetName = "h200-1gpu" | "8x-h200" | "8x-rtx-pro-6000-blackwell" | "8x-b200" | "8x-a100";

export const GPU_SET_NAMES: readonly GpuSetName[] = [
  "h200-1gpu",
  "8x-h200",
  "8x-rtx-pro-6000-blackwell",
  "8x-b200",
  "8x-a100",
];

export interface SimGpuHostOptions {
  /** Sandbox directory (created if missing; an existing one is reused). */
  root: string;
  /** Host name, shown in journal lines. */
  name: string;
  gpus: GpuSetName;
  /** Base URL of the simulated Hub, for the hf shim (state/config.json "hubUrl"). */
  hubUrl?: string;
  /** Host RAM in GiB (stored in state/config.json "hostMemGiB"; `free` reports it as the total). */
  hostMemGiB?: number;
  /**
   * The engine at start. `preinstalled` (default): an older SGLang (0.5.5, with every current
   * flag) is installed editable from `engineSourceDir/python` — plain files, no `.git` — so the
   * host can serve a model at once, as a real host would before its first swap. `none`: `engineSourceDir` exists but is empty,
   * and `import sglang` fails.
   */
  engine?: "preinstalled" | "none";
  /** Which Hugging Face CLIs exist in `bin/` (default `hf`, as with huggingface_hub 1.x). */
  hubCli?: "hf" | "huggingface-cli" | "both" | "none";
  /**
   * The simulated engines' own settings on this host, under every fault (state/config.json "sglang",
   * "vllm"; SGLANG.md): e.g. `{ sglang: { loadSeconds: 0.5 } }`. A fault set later overrides them
   * setting by setting; one that sets other settings leaves them be.
   */
  engineBase?: { sglang?: Record<string, number>; vllm?: Record<string, number> };
}

/** The engine `import sglang` finds: version (`__version__`) and project directory. */
export interface InstalledEngine {
  version: string | null;
  projectDir: string;
  packageDir: string;
}

export interface ShimCall {
  at: string;
  cmd: string;
  argv: string[];
}

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** A unit's state as `systemctl show` reports it, parsed. */
export interface UnitState {
  id: string;
  loadState: string;
  activeState: string;
  subState: string;
  result: string;
  mainPid: number;
  execMainPid: number;
  execMainCode: number;
  execMainStatus: number;
  execMainStartTimestamp: string;
  activeEnterTimestamp: string;
  nRestarts: number;
  unitFileState: string;
  needDaemonReload: boolean;
  description: string;
  fragmentPath: string;
  environment: string;
  /** Every property of `systemctl show`. */
  raw: Record<string, string>;
}

/** The state/config.json the shims read. */
export interface SimHostConfig {
  name: string;
  gpus: GpuSetName;
  hubUrl?: string;
  hostMemGiB?: number;
  /** The engine sims' settings under every fault (SimGpuHostOptions.engineBase). */
  sglang?: Record<string, number>;
  vllm?: Record<string, number>;
  /**
   * The process that made (or last re-opened) this host: the bench. Its simulated units stop by
   * themselves once it is gone without stopping them (unit-supervisor.mjs), so an interrupted bench or
   * a killed test process never leaves simulated engines running.
   */
  ownerPid?: number;
}

function normalizeUnitName(name: string): string {
  return /\.(service|socket|target|timer|mount|path|slice|scope)$/.test(name) ? name : `${name}.service`;
}

/** systemctl verbs that only read (SimGpuHost.systemctlHere runs them in the test's process). */
const READ_ONLY_VERBS = new Set([
  "show",
  "list-units",
  "list-unit-files",
  "is-active",
  "is-enabled",
  "is-failed",
  "cat",
  "status",
]);

function runFile(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<CommandResult> {
  return new Promise((resolveRun) => {
    execFile(file, args, { env, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      let code = 0;
      if (error) {
        const c = (error as NodeJS.ErrnoException & { code?: unknown }).code;
        code = typeof c === "number" ? c : 1;
      }
      resolveRun({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

/** Fields after the command name in /proc/<pid>/stat: [state, ppid, pgrp, ...] ([] when gone). */
function statFields(pid: number): string[] {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return [];
  }
}

/** Parent pid of a process (0 when unknown). */
function parentPid(pid: number): number {
  return Number(statFields(pid)[1] ?? 0);
}

/** Process group of a process (0 when unknown). */
function processGroupOf(pid: number): number {
  return Number(statFields(pid)[2] ?? 0);
}

/** This process and its ancestors: never killed by stop(). */
function selfAndAncestors(): Set<number> {
  const pids = new Set<number>();
  let pid = process.pid;
  while (pid > 1 && !pids.has(pid)) {
    pids.add(pid);
    pid = parentPid(pid);
  }
  pids.add(1);
  return pids;
}

/** Live processes whose environment holds MODELSWAP_SANDBOX=<root>. */
function processesOfSandbox(root: string): number[] {
  const marker = `MODELSWAP_SANDBOX=${root}`;
  const found: number[] = [];
  let entries: string[] = [];
  try {
    entries = readdirSync("/proc");
  } catch {
    return found;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const environ = readFileSync(`/proc/${entry}/environ`, "utf8");
      if (environ.split("\0").includes(marker) && isAlive(Number(entry))) found.push(Number(entry));
    } catch {
      // not ours to read, or gone
    }
  }
  return found;
}

interface UnitStateFile {
  supervisorPid?: number;
  mainPid?: number;
  controlPid?: number;
  pgids?: number[];
  activeState?: string;
  [key: string]: unknown;
}

/** A simulated GPU host: a sandbox directory with shims for systemctl, journalctl, nvidia-smi, hf, python. */
export class SimGpuHost {
  readonly root: string;
  readonly name: string;
  readonly gpus: GpuSetName;
  readonly binDir: string;
  readonly unitDir: string;
  readonly modelsDir: string;
  readonly engineSourceDir: string;
  readonly venvDir: string;
  readonly sitePackagesDir: string;
  readonly stateDir: string;
  private faultsChain: Promise<void> = Promise.resolve();

  constructor(root: string, name: string, gpus: GpuSetName) {
    this.root = resolve(root);
    this.name = name;
    this.gpus = gpus;
    const paths = sandboxPaths(this.root);
    this.binDir = paths.binDir;
    this.unitDir = paths.unitDir;
    this.modelsDir = paths.modelsDir;
    this.engineSourceDir = paths.engineSourceDir;
    this.venvDir = paths.venvDir;
    this.sitePackagesDir = paths.sitePackagesDir;
    this.stateDir = paths.stateDir;
  }

  /** The engine `import sglang` finds (the newest editable-install marker), or null. */
  installedEngine(): InstalledEngine | null {
    const found = importableSglang(this.root);
    return found
      ? { version: found.version, projectDir: found.projectDir, packageDir: found.packageDir }
      : null;
  }

  /** What pip changed in the venv: `replaced` is true once the CUDA stack was touched. */
  cudaStack(): StackState {
    return readStackState(this.root);
  }

  /** Environment for running commands "on" this host locally: PATH with `<root>/bin` first. */
  env(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
    return { ...base, PATH: `${this.binDir}:${base.PATH ?? "/usr/local/bin:/usr/bin:/bin"}` };
  }

  /** Runs a shell command on the host (local bash with `<root>/bin` first on PATH). */
  exec(command: string): Promise<CommandResult> {
    // --norc: the test runner's ~/.bashrc is not the host's (see LocalTransport.exec)
    return runFile("/bin/bash", ["--noprofile", "--norc", "-c", command], this.env());
  }

  /** Merges one fault switch into state/faults.json (see README.md for the switches). */
  setFault(name: string, value: unknown): Promise<void> {
    const next = this.faultsChain.then(() => {
      const file = sandboxPaths(this.root).faultsFile;
      const faults = readJsonFile<Record<string, unknown>>(file, {});
      faults[name] = value;
      writeJsonAtomic(file, faults);
    });
    this.faultsChain = next.catch(() => undefined);
    return next;
  }

  /**
   * Holds the next calls of a command (`systemctl`, `nvidia-smi`, `python`, `curl`, `socat`, …) whose arguments
   * contain `text` (matched against " arg1 arg2 … "): they wait before running until `release`. With
   * `waitHeld` a test knows the bot is blocked inside that command — the moment to kill it.
   */
  async hold(command: string, text = ""): Promise<void> {
    const paths = sandboxPaths(this.root);
    await mkdir(join(paths.stateDir, "holds"), { recursive: true });
    await mkdir(join(paths.stateDir, "held"), { recursive: true });
    // real binaries get a wrapper that holds, then runs them (socat: the front door's Runtime API)
    if (command === "curl" || command === "socat")
      await writePassthroughWrapper(join(this.binDir, command), `/usr/bin/${command}`, this.root);
    await rm(join(paths.stateDir, "held", command), { force: true });
    await writeFile(join(paths.stateDir, "holds", command), text);
  }

  /** Resolves once a call of `command` is waiting on its hold. */
  async waitHeld(command: string, timeoutMs = 60_000): Promise<void> {
    const marker = join(sandboxPaths(this.root).stateDir, "held", command);
    const deadline = Date.now() + timeoutMs;
    while (!existsSync(marker)) {
      if (Date.now() > deadline)
        throw new Error(`${this.name}: no call of ${command} reached its hold in ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Lets held calls of `command` run, and holds no more. */
  async release(command: string): Promise<void> {
    const state = sandboxPaths(this.root).stateDir;
    await rm(join(state, "holds", command), { force: true });
    await rm(join(state, "held", command), { force: true });
  }

  /** Removes every fault switch. */
  clearFaults(): Promise<void> {
    const next = this.faultsChain.then(() => writeJsonAtomic(sandboxPaths(this.root).faultsFile, {}));
    this.faultsChain = next.catch(() => undefined);
    return next;
  }

  /** Writes a unit file into the unit directory ("x" means "x.service"). */
  async installUnit(unitName: string, content: string): Promise<void> {
    await mkdir(this.unitDir, { recursive: true });
    await writeFile(join(this.unitDir, normalizeUnitName(unitName)), content);
  }

  /** Runs the systemctl shim (its read-only verbs in this process: systemctlHere). */
  async systemctl(...args: string[]): Promise<CommandResult> {
    return (
      (await this.systemctlHere(args)) ?? (await runFile(join(this.binDir, "systemctl"), args, this.env()))
    );
  }

  /** Runs the journalctl shim. */
  journalctl(...args: string[]): Promise<CommandResult> {
    return runFile(join(this.binDir, "journalctl"), args, this.env());
  }

  /** Runs the nvidia-smi shim. */
  nvidiaSmi(...args: string[]): Promise<CommandResult> {
    return runFile(join(this.binDir, "nvidia-smi"), args, this.env());
  }

  /**
   * systemctl's read-only verbs — show, list-units, list-unit-files, is-active, is-enabled, is-failed,
   * cat, status — run in this process by the shim's own code (shims/systemctl-main.mjs runSystemctl: the
   * call recorded, the same stdout, stderr and exit code): tests poll unitState (show --all) and the fault
   * campaign lists units, and a Node start per poll cost the suite CPU it is short of (#29). None of them
   * starts a process, writes a unit's state or waits. Any other verb, `--version` (the shim exits at once)
   * and a call a hold on systemctl matches (see hold: the wrapper waits on it) go through the wrapper.
   */
  private async systemctlHere(argv: string[]): Promise<CommandResult | null> {
    const verb = parseSystemctlArgs(argv.filter((a) => a !== "--version")).positional[0] ?? "list-units";
    if (argv.includes("--version") || !READ_ONLY_VERBS.has(verb)) return null;
    const hold = join(sandboxPaths(this.root).stateDir, "holds", "systemctl");
    if (existsSync(hold)) {
      // the wrapper's hold: `$(cat <hold>)` (trailing newlines dropped) inside " <args> "
      let text = "";
      try {
        text = readFileSync(hold, "utf8").replace(/\n+$/, "");
      } catch {
        // released meanwhile: the wrapper decides
      }
      if (` ${argv.join(" ")} `.includes(text)) return null;
    }
    return await runSystemctl(argv, this.root);
  }

  /** The unit's state, parsed from `systemctl show`. */
  async unitState(unitName: string): Promise<UnitState> {
    const result = await this.systemctl("show", normalizeUnitName(unitName), "--all");
    const raw: Record<string, string> = {};
    for (const line of result.stdout.split("\n")) {
      const eq = line.indexOf("=");
      if (eq > 0) raw[line.slice(0, eq)] = line.slice(eq + 1);
    }
    const num = (key: string): number => Number(raw[key] ?? 0);
    return {
      id: raw.Id ?? normalizeUnitName(unitName),
      loadState: raw.LoadState ?? "",
      activeState: raw.ActiveState ?? "",
      subState: raw.SubState ?? "",
      result: raw.Result ?? "",
      mainPid: num("MainPID"),
      execMainPid: num("ExecMainPID"),
      execMainCode: num("ExecMainCode"),
      execMainStatus: num("ExecMainStatus"),
      execMainStartTimestamp: raw.ExecMainStartTimestamp ?? "",
      activeEnterTimestamp: raw.ActiveEnterTimestamp ?? "",
      nRestarts: num("NRestarts"),
      unitFileState: raw.UnitFileState ?? "",
      needDaemonReload: raw.NeedDaemonReload === "yes",
      description: raw.Description ?? "",
      fragmentPath: raw.FragmentPath ?? "",
      environment: raw.Environment ?? "",
      raw,
    };
  }

  /** The unit's journal messages (like `journalctl -u UNIT -o cat`), one per line; "" when empty. */
  async journal(unitName: string): Promise<string> {
    try {
      const text = await readFile(
        join(sandboxPaths(this.root).journalDir, `${normalizeUnitName(unitName)}.log`),
        "utf8",
      );
      return text
        .split("\n")
        .filter((line) => line !== "")
        .map((line) => line.split("\t").slice(3).join("\t"))
        .join("\n");
    } catch {
      return "";
    }
  }

  /** Every shim invocation so far, oldest first. */
  async calls(): Promise<ShimCall[]> {
    let text = "";
    try {
      text = await readFile(sandboxPaths(this.root).callsFile, "utf8");
    } catch {
      return [];
    }
    const calls: ShimCall[] = [];
    for (const line of text.split("\n")) {
      if (line.trim() === "") continue;
      try {
        calls.push(JSON.parse(line) as ShimCall);
      } catch {
        // a torn line: skip
      }
    }
    return calls;
  }

  /**
   * Kills every process of this host: unit supervisors, unit processes and their process
   * groups, registered long-lived processes, and any process whose environment carries
   * MODELSWAP_SANDBOX=<root>. Units are left inactive. Never kills this process or its ancestors.
   */
  async stop(): Promise<void> {
    const paths = sandboxPaths(this.root);
    const protectedPids = selfAndAncestors();
    const unitFiles = await readdir(paths.unitsStateDir).catch(() => [] as string[]);
    const states = new Map<string, UnitStateFile>();
    for (const file of unitFiles) {
      if (!file.endsWith(".json")) continue;
      states.set(file, readJsonFile<UnitStateFile>(join(paths.unitsStateDir, file), {}));
    }
    const registered = (await readdir(paths.procsDir).catch(() => [] as string[]))
      .map((f) => /^(\d+)\.json$/.exec(f)?.[1])
      .filter((p): p is string => p !== undefined)
      .map(Number);

    const kill = (target: number) => {
      if (protectedPids.has(Math.abs(target))) return;
      try {
        process.kill(target, "SIGKILL");
      } catch {
        // gone already
      }
    };
    // Supervisors first, so that nothing restarts what is being killed.
    for (const state of states.values()) {
      if (state.supervisorPid && isAlive(state.supervisorPid)) kill(state.supervisorPid);
    }
    const groups = new Set<number>();
    for (const state of states.values()) {
      for (const pid of [state.mainPid, state.controlPid, ...(state.pgids ?? [])])
        if (pid && pid > 0) groups.add(pid);
    }
    for (const pid of registered) groups.add(pid);
    for (let round = 0; round < 20; round++) {
      for (const pgid of groups) if (processGroupAlive(pgid)) kill(-pgid);
      for (const pid of registered) if (isAlive(pid)) kill(pid);
      const stragglers = processesOfSandbox(this.root).filter((pid) => !protectedPids.has(pid));
      for (const pid of stragglers) {
        // A straggler leading its own group (setsid, detached) takes its group along.
        if (processGroupOf(pid) === pid) groups.add(pid);
        kill(pid);
      }
      const anyGroup = [...groups].some((pgid) => !protectedPids.has(pgid) && processGroupAlive(pgid));
      if (stragglers.length === 0 && !anyGroup) break;
      await sleep(25);
    }
    const at = new Date().toISOString();
    for (const [file, state] of states) {
      if (["active", "activating", "deactivating", "reloading"].includes(String(state.activeState))) {
        writeJsonAtomic(join(paths.unitsStateDir, file), {
          ...state,
          activeState: "inactive",
          subState: "dead",
          mainPid: 0,
          controlPid: 0,
          supervisorPid: 0,
          inactiveEnterAt: at,
          stateChangeAt: at,
        });
      }
    }
    for (const pid of registered) await rm(join(paths.procsDir, `${pid}.json`), { force: true });
    await rm(paths.locksDir, { recursive: true, force: true });
  }
}

/** Creates (or re-opens) a simulated GPU host in `opts.root` and writes its shim wrappers. */
export async function createSimGpuHost(opts: SimGpuHostOptions): Promise<SimGpuHost> {
  if (!GPU_SET_NAMES.includes(opts.gpus)) throw new Error(`unknown GPU set ${opts.gpus}`);
  const host = new SimGpuHost(opts.root, opts.name, opts.gpus);
  const paths = sandboxPaths(host.root);
  for (const dir of [
    paths.binDir,
    paths.unitDir,
    paths.modelsDir,
    join(paths.venvDir, "bin"),
    paths.unitsStateDir,
    paths.loadedDir,
    paths.journalDir,
    paths.gpuUsageDir,
    paths.procsDir,
  ]) {
    await mkdir(dir, { recursive: true });
  }
  const config: SimHostConfig = { name: opts.name, gpus: opts.gpus, ownerPid: process.pid };
  if (opts.hubUrl !== undefined) config.hubUrl = opts.hubUrl;
  if (opts.hostMemGiB !== undefined) config.hostMemGiB = opts.hostMemGiB;
  if (opts.engineBase?.sglang !== undefined) config.sglang = opts.engineBase.sglang;
  if (opts.engineBase?.vllm !== undefined) config.vllm = opts.engineBase.vllm;
  writeJsonAtomic(paths.configFile, config);
  if (readJsonFile<unknown>(paths.faultsFile, null) === null) writeJsonAtomic(paths.faultsFile, {});
  for (const name of ["systemctl", "journalctl", "nvidia-smi", "df", "free", "sudo"]) {
    // the forms a swap asks many times a second, answered by the wrapper without Node (the files say which)
    const fastPath =
      name === "systemctl"
        ? systemctlFastPath(host.root)
        : name === "journalctl"
          ? journalctlTailFastPath(host.root)
          : name === "df"
            ? dfFastPath(host.root)
            : name === "nvidia-smi"
              ? nvidiaSmiFastPath(host.root, opts.gpus)
              : name === "free"
                ? freeFastPath(host.root)
                : "";
    await writeShimWrapper(join(paths.binDir, name), shimScriptPath(name), host.root, {}, fastPath);
  }
  const hubCli = opts.hubCli ?? "hf";
  const clis = {
    hf: hubCli === "hf" || hubCli === "both",
    "huggingface-cli": hubCli !== "hf" && hubCli !== "none",
  };
  for (const [name, wanted] of Object.entries(clis)) {
    if (wanted && existsSync(shimScriptPath(name)))
      await writeShimWrapper(
        join(paths.binDir, name),
        shimScriptPath(name),
        host.root,
        {},
        name === "hf" ? hfFastPath(host.root) : "",
      );
    else await rm(join(paths.binDir, name), { force: true });
  }
  for (const name of ["python", "python3"]) {
    await writeShimWrapper(
      join(paths.venvDir, "bin", name),
      shimScriptPath("python"),
      host.root,
      {},
      pythonFastPath(host.root),
    );
  }
  for (const name of ["pip", "pip3"]) {
    await writeShimWrapper(join(paths.venvDir, "bin", name), shimScriptPath("pip"), host.root);
  }
  await mkdir(paths.sitePackagesDir, { recursive: true });
  await mkdir(paths.engineSourceDir, { recursive: true });
  if ((opts.engine ?? "preinstalled") === "preinstalled" && importableSglang(host.root) === null) {
    await writeEngineTree(paths.engineSourceDir, ENGINE_PREINSTALLED);
    writeEditableInstall(
      { ...engineDistribution(ENGINE_PREINSTALLED), projectDir: join(paths.engineSourceDir, "python") },
      host.root,
    );
  }
  return host;
}
