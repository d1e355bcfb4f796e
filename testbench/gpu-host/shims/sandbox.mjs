/**
 * Shared helpers for every shim of the simulated GPU host (not a command itself).
 *
 * A shim finds its sandbox through the MODELSWAP_SANDBOX environment variable, which the
 * `<root>/bin/<name>` wrapper scripts set. Layout of a sandbox:
 *
 *   <root>/bin/                      shim wrappers (systemctl, journalctl, nvidia-smi, hf, df, free)
 *   <root>/etc/systemd/system/       unit files (+ <target>.wants/ symlinks made by `enable`)
 *   <root>/models/                   model downloads
 *   <root>/opt/sglang/               engine source (git checkout target; python/ is the package)
 *   <root>/opt/venvs/sglang/bin/     python / python3 / pip / pip3 wrappers
 *   <root>/opt/venvs/sglang/lib/python3.12/site-packages/   editable-install markers (venv.mjs)
 *   <root>/state/config.json         { name, gpus, hubUrl, hostMemGiB }
 *   <root>/state/faults.json         fault switches (see README.md)
 *   <root>/state/calls.jsonl         one JSON line per shim invocation
 *   <root>/state/units/<unit>.json   runtime state of a unit (written by the unit supervisor)
 *   <root>/state/loaded/<unit>.json  what the simulated systemd has "loaded" (daemon-reload)
 *   <root>/state/journal/<unit>.log  the unit's journal, "ISO\tpid\tcomm\tmessage" per line
 *   <root>/state/gpu-usage/<pid>.json  simulated GPU usage of a live process
 *   <root>/state/procs/<pid>.json    long-lived processes to kill on SimGpuHost.stop()
 *   <root>/state/cuda-stack.json     packages pip changed in the venv (venv.mjs)
 *
 * All writes of whole files are atomic (temporary file + rename), so shims may run concurrently.
 */
import { randomBytes } from "node:crypto";
import {
  accessSync,
  appendFileSync,
  closeSync,
  constants,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { dirname, join, resolve } from "node:path";

export const SANDBOX_ENV = "MODELSWAP_SANDBOX";

/**
 * The first executable `name` in the directories of a PATH-like `searchPath` (empty entries skipped),
 * as execvp(3) and systemd look a bare command name up; undefined when there is none.
 */
export function findOnPath(name, searchPath) {
  for (const dir of (searchPath ?? "").split(":")) {
    if (dir === "") continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here: keep looking
    }
  }
  return undefined;
}

/** The sandbox root of the calling shim (from MODELSWAP_SANDBOX); throws when unset. */
export function sandboxRoot() {
  const root = process.env[SANDBOX_ENV];
  if (root === undefined || root === "") {
    throw new Error(`${SANDBOX_ENV} is not set: shims must be run through their <root>/bin wrapper`);
  }
  return resolve(root);
}

/** Every well-known path of a sandbox. */
export function sandboxPaths(root = sandboxRoot()) {
  const stateDir = join(root, "state");
  return {
    root,
    binDir: join(root, "bin"),
    unitDir: join(root, "etc", "systemd", "system"),
    modelsDir: join(root, "models"),
    engineSourceDir: join(root, "opt", "sglang"),
    venvDir: join(root, "opt", "venvs", "sglang"),
    sitePackagesDir: join(root, "opt", "venvs", "sglang", "lib", "python3.12", "site-packages"),
    stateDir,
    unitsStateDir: join(stateDir, "units"),
    loadedDir: join(stateDir, "loaded"),
    journalDir: join(stateDir, "journal"),
    gpuUsageDir: join(stateDir, "gpu-usage"),
    pinnedDir: join(stateDir, "pinned"),
    procsDir: join(stateDir, "procs"),
    locksDir: join(stateDir, "locks"),
    faultsFile: join(stateDir, "faults.json"),
    configFile: join(stateDir, "config.json"),
    callsFile: join(stateDir, "calls.jsonl"),
    cudaStackFile: join(stateDir, "cuda-stack.json"),
  };
}

/** Parsed JSON of a file, or `fallback` when it is missing or unreadable. */
export function readJsonFile(path, fallback) {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch {
    return fallback;
  }
}

/** Writes a file atomically (temporary file in the same directory, then rename). */
export function writeFileAtomic(path, data) {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  writeFileSync(tmp, data);
  renameSync(tmp, path);
}

/** Writes JSON atomically. */
export function writeJsonAtomic(path, value) {
  writeFileAtomic(path, `${JSON.stringify(value, null, 2)}\n`);
}

/** Appends one line (O_APPEND: small lines from concurrent writers never interleave). */
export function appendLine(path, line) {
  mkdirSync(dirname(path), { recursive: true });
  appendFileSync(path, `${line}\n`);
}

/** The fault switches of the sandbox (state/faults.json), `{}` when none. */
export function readFaults(root = sandboxRoot()) {
  const faults = readJsonFile(sandboxPaths(root).faultsFile, {});
  return faults !== null && typeof faults === "object" ? faults : {};
}

/** One fault switch, or undefined. */
export function fault(name, root = sandboxRoot()) {
  return readFaults(root)[name];
}

/** The host configuration (state/config.json): { name, gpus, hubUrl?, hostMemGiB? }. */
export function readConfig(root = sandboxRoot()) {
  const config = readJsonFile(sandboxPaths(root).configFile, {});
  return config !== null && typeof config === "object" ? config : {};
}

/** Records a shim invocation in state/calls.jsonl: { at, cmd, argv }. */
export function recordCall(cmd, argv, root = sandboxRoot()) {
  appendLine(sandboxPaths(root).callsFile, JSON.stringify({ at: new Date().toISOString(), cmd, argv }));
}

/** Linux process state letter (R, S, Z, ...) or null when the process does not exist. */
export function processState(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0] ?? null;
  } catch {
    return null;
  }
}

/** True when the process exists and is not a zombie. */
export function isAlive(pid) {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    if (error?.code === "EPERM") return true;
    return false;
  }
  const state = processState(pid);
  return state !== null && state !== "Z" && state !== "X";
}

/**
 * Live (non-zombie) members of a process group, found by scanning /proc: [{ pid, state }].
 * A group whose members are all zombies counts as gone.
 */
export function processGroupMembers(pgid) {
  const members = [];
  if (!Number.isInteger(pgid) || pgid <= 0) return members;
  let entries = [];
  try {
    entries = readdirSync("/proc");
  } catch {
    return members;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) === pgid && fields[0] !== "Z" && fields[0] !== "X") {
        members.push({ pid: Number(entry), state: fields[0] });
      }
    } catch {
      // the process vanished meanwhile
    }
  }
  return members;
}

/** True when a process group still has a live member. */
export function processGroupAlive(pgid) {
  try {
    process.kill(-pgid, 0);
  } catch (error) {
    if (error?.code !== "EPERM") return false;
  }
  return processGroupMembers(pgid).length > 0;
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms) {
  return new Promise((resolveSleep) => setTimeout(resolveSleep, ms));
}

/**
 * Registers simulated GPU usage of a process, shown by `nvidia-smi` while the process lives.
 * `memMiB` is per GPU (a number for all listed GPUs, or an array parallel to `gpus`);
 * `util` is the utilization in percent it adds on each of its GPUs.
 */
export function registerGpuUsage(
  { pid = process.pid, gpus = [0], memMiB = 0, util = 0, processName = "python3" } = {},
  root = sandboxRoot(),
) {
  writeJsonAtomic(join(sandboxPaths(root).gpuUsageDir, `${pid}.json`), { gpus, memMiB, util, processName });
}

/** Removes the simulated GPU usage of a process. */
export function clearGpuUsage(pid = process.pid, root = sandboxRoot()) {
  try {
    unlinkSync(join(sandboxPaths(root).gpuUsageDir, `${pid}.json`));
  } catch {
    // already gone
  }
}

/** Usage entries of live processes: [{ pid, gpus, memMiB, util, processName }]. */
export function liveGpuUsage(root = sandboxRoot()) {
  const dir = sandboxPaths(root).gpuUsageDir;
  let names = [];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const entries = [];
  for (const name of names) {
    const match = /^(\d+)\.json$/.exec(name);
    if (!match) continue;
    const pid = Number(match[1]);
    if (!isAlive(pid)) continue;
    const entry = readJsonFile(join(dir, name), null);
    if (entry === null || typeof entry !== "object") continue;
    entries.push({
      pid,
      gpus: Array.isArray(entry.gpus) ? entry.gpus.map(Number) : [0],
      memMiB: entry.memMiB ?? 0,
      util: Number(entry.util ?? 0),
      processName: String(entry.processName ?? "python3"),
    });
  }
  return entries.sort((a, b) => a.pid - b.pid);
}

/**
 * Host RAM a process has pinned (a parked engine's copy of its weights: SGLang's CPU backup, vLLM's
 * sleep level 1), which `free` counts as used while the process lives.
 */
export function registerPinnedMemory(bytes, pid = process.pid, root = sandboxRoot()) {
  writeJsonAtomic(join(sandboxPaths(root).pinnedDir, `${pid}.json`), { bytes });
}

/** Unpins it (the weights went back to the GPUs). */
export function clearPinnedMemory(pid = process.pid, root = sandboxRoot()) {
  try {
    unlinkSync(join(sandboxPaths(root).pinnedDir, `${pid}.json`));
  } catch {
    // already gone
  }
}

/** Bytes of host RAM pinned by live processes. */
export function livePinnedBytes(root = sandboxRoot()) {
  const dir = sandboxPaths(root).pinnedDir;
  let names = [];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  let total = 0;
  for (const name of names) {
    const match = /^(\d+)\.json$/.exec(name);
    if (!match || !isAlive(Number(match[1]))) continue;
    total += Number(readJsonFile(join(dir, name), {})?.bytes ?? 0) || 0;
  }
  return total;
}

/**
 * Records a long-lived process (e.g. a detached download, a hanging command) so that
 * SimGpuHost.stop() kills it and its process group. Unit processes need not call this.
 */
export function registerProcess(pid = process.pid, label = "", root = sandboxRoot()) {
  writeJsonAtomic(join(sandboxPaths(root).procsDir, `${pid}.json`), {
    pid,
    label,
    at: new Date().toISOString(),
  });
}

/** Appends one line to a unit's journal (what `journalctl -u <unit>` shows). */
export function appendJournal(unit, pid, comm, message, root = sandboxRoot()) {
  const file = join(sandboxPaths(root).journalDir, `${unit}.log`);
  const safe = String(message).replace(/\r?\n/g, " ");
  appendLine(file, `${new Date().toISOString()}\t${pid}\t${comm}\t${safe}`);
}

/**
 * Runs `fn` holding an exclusive lock file (state/locks/<name>.lock). A lock whose holder died
 * is taken over. Waits up to `timeoutMs`, then throws.
 */
export async function withLock(name, fn, { root = sandboxRoot(), timeoutMs = 60_000 } = {}) {
  const file = join(sandboxPaths(root).locksDir, `${name}.lock`);
  mkdirSync(dirname(file), { recursive: true });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const fd = openSync(file, "wx");
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (error) {
      if (error?.code !== "EEXIST") throw error;
      let holder = Number.NaN;
      try {
        holder = Number(readFileSync(file, "utf8"));
      } catch {
        continue;
      }
      if (holder > 0 && !isAlive(holder)) {
        // Stale: take it over by renaming (atomic) so two waiters cannot both delete a fresh lock.
        const stale = `${file}.${process.pid}.stale`;
        try {
          renameSync(file, stale);
          const again = Number(readFileSync(stale, "utf8"));
          if (again === holder) unlinkSync(stale);
          else renameSync(stale, file);
        } catch {
          // someone else handled it
        }
        continue;
      }
      if (Date.now() > deadline) throw new Error(`timed out waiting for lock ${name} held by pid ${holder}`);
      await sleep(5);
    }
  }
  try {
    return await fn();
  } finally {
    try {
      if (Number(readFileSync(file, "utf8")) === process.pid) unlinkSync(file);
    } catch {
      // already released
    }
  }
}
