/**
 * Imitates what systemd (PID 1) does for ONE activation of a Type=simple service: run
 * ExecStartPre= then ExecStart= as real child processes (own process group, the unit's
 * Environment= and WorkingDirectory=), send their output to the unit's journal, track the
 * unit's state in <root>/state/units/<unit>.json, restart per Restart= with the start rate
 * limit (5 starts in 10 s), and stop on SIGTERM (SIGTERM to the process group, SIGKILL after
 * the stop timeout). Started detached by the systemctl shim:
 *
 *   node unit-supervisor.mjs <sandbox-root> <unit-name> <invocation-id>
 *
 * While it runs it is the only writer of the unit's state file.
 */
import { spawn } from "node:child_process";
import { accessSync, constants, statSync } from "node:fs";
import { basename, isAbsolute, join } from "node:path";
import { createInterface } from "node:readline";
import {
  appendJournal,
  findOnPath,
  isAlive,
  processGroupAlive,
  readFaults,
  readJsonFile,
  sandboxPaths,
  sleep,
} from "./sandbox.mjs";
import {
  emptyUnitState,
  formatExitStatus,
  readUnitState,
  resolveUnit,
  START_LIMIT_BURST,
  START_LIMIT_INTERVAL_MS,
  signalNumber,
  systemdLog,
  unitLabel,
  writeUnitState,
} from "./units.mjs";

const [root, name, invocationId] = process.argv.slice(2);
if (!root || !name || !invocationId) {
  process.stderr.write("usage: unit-supervisor.mjs <root> <unit> <invocation-id>\n");
  process.exit(2);
}

const faults = readFaults(root);
const { unit } = resolveUnit(root, name);
const label = unitLabel(unit, name);
const log = (message) => systemdLog(root, name, message);
const nowIso = () => new Date().toISOString();

const restartDelayMs = typeof faults.restartSec === "number" ? faults.restartSec * 1000 : 100;
const stopTimeoutMs =
  typeof faults.stopTimeoutSec === "number"
    ? faults.stopTimeoutSec * 1000
    : Math.min(unit?.timeoutStopMs ?? 5000, 5000);

const previous = readUnitState(root, name) ?? emptyUnitState(name);
const state = {
  ...emptyUnitState(name),
  execMainPid: previous.execMainPid,
  execMainCode: previous.execMainCode,
  execMainStatus: previous.execMainStatus,
  execMainStartAt: previous.execMainStartAt,
  execMainExitAt: previous.execMainExitAt,
  activeEnterAt: previous.activeEnterAt,
  activeExitAt: previous.activeExitAt,
  inactiveEnterAt: previous.inactiveEnterAt,
  execStart: previous.execStart,
  startTimes: Array.isArray(previous.startTimes) ? previous.startTimes : [],
  pgids: Array.isArray(previous.pgids) ? previous.pgids.slice(-50) : [],
  invocationId,
  supervisorPid: process.pid,
  activeState: "activating",
  subState: "start",
  startJob: "pending",
  inactiveExitAt: nowIso(),
  stateChangeAt: nowIso(),
};

function save() {
  writeUnitState(root, name, state);
}

function setState(activeState, subState) {
  const at = nowIso();
  if (activeState === "active" && state.activeState !== "active") state.activeEnterAt = at;
  if (activeState !== "active" && state.activeState === "active") state.activeExitAt = at;
  if (activeState === "inactive" || activeState === "failed") state.inactiveEnterAt = at;
  state.activeState = activeState;
  state.subState = subState;
  state.stateChangeAt = at;
  save();
}

/** Current phase and the process being waited for, so SIGTERM can act. */
let phase = "starting"; // starting | start-pre | running | auto-restart | stopping | done
let stopRequested = false;
let currentPgid = 0;
let currentComm = "";
let wakeRestartWait = null;

function killGroup(pgid, signal) {
  if (pgid <= 0) return;
  try {
    process.kill(-pgid, signal);
  } catch {
    // group already gone
  }
}

function groupHasLiveMembers(pgid) {
  return processGroupAlive(pgid);
}

/**
 * What systemd does with the rest of a unit's control group once its process exited:
 * SIGTERM, then SIGKILL after the stop timeout.
 */
async function reapGroup(pgid) {
  if (pgid <= 0 || !groupHasLiveMembers(pgid)) return;
  killGroup(pgid, "SIGTERM");
  if (await waitGroupGone(pgid, stopTimeoutMs)) return;
  log(`${name}: State 'stop-sigterm' timed out. Killing.`);
  killGroup(pgid, "SIGKILL");
  await waitGroupGone(pgid, 2000);
}

async function waitGroupGone(pgid, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!groupHasLiveMembers(pgid)) return true;
    await sleep(20);
  }
  return !groupHasLiveMembers(pgid);
}

function childEnv() {
  const env = {
    LANG: "C.UTF-8",
    PATH: `${join(root, "bin")}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
    HOME: process.env.HOME ?? "/root",
    USER: process.env.USER ?? "root",
    LOGNAME: process.env.LOGNAME ?? process.env.USER ?? "root",
    INVOCATION_ID: invocationId,
    MODELSWAP_SANDBOX: root,
  };
  return { ...env, ...(unit?.fullEnvironment ?? {}) };
}

function resolveExecutable(path, env) {
  return isAbsolute(path) ? path : (findOnPath(path, env.PATH) ?? null);
}

/**
 * Runs one command of the unit. Resolves { spawnError?, step?, status, code, signal }
 * where code is "exited" | "killed".
 */
function runCommand(command, { main }) {
  return new Promise((resolveRun) => {
    const env = childEnv();
    const executable = resolveExecutable(command.path, env);
    let cwd = "/";
    if (unit?.workingDirectory) {
      const optional = unit.workingDirectory.startsWith("-");
      const dir = optional ? unit.workingDirectory.slice(1) : unit.workingDirectory;
      const expanded = dir === "~" ? env.HOME : dir;
      let ok = false;
      try {
        ok = statSync(expanded).isDirectory();
      } catch {
        ok = false;
      }
      if (ok) cwd = expanded;
      else if (!optional) {
        log(`${name}: Changing to the requested working directory failed: No such file or directory`);
        log(`${name}: Failed at step CHDIR spawning ${command.path}: No such file or directory`);
        resolveRun({ status: 200, code: "exited", signal: null, pid: 0, spawnFailed: true });
        return;
      }
    }
    let execOk = executable !== null;
    if (execOk) {
      try {
        accessSync(executable, constants.X_OK);
        execOk = statSync(executable).isFile();
      } catch {
        execOk = false;
      }
    }
    if (!execOk) {
      log(`${name}: Unable to locate executable '${command.path}': No such file or directory`);
      log(`${name}: Failed at step EXEC spawning ${command.path}: No such file or directory`);
      resolveRun({ status: 203, code: "exited", signal: null, pid: 0, spawnFailed: true });
      return;
    }
    const child = spawn(executable, command.argv.slice(1), {
      argv0: command.argv[0] ?? executable,
      cwd,
      env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const pid = child.pid ?? 0;
    const comm = basename(command.path);
    currentPgid = pid;
    currentComm = comm;
    state.pgids = [...state.pgids.filter((p) => p !== pid), pid].slice(-50);
    if (main) {
      state.mainPid = pid;
      state.execMainPid = pid;
      state.execMainStartAt = nowIso();
      state.execMainExitAt = null;
      state.execMainCode = "";
      state.execMainStatus = 0;
      state.execStart = { path: executable, argv: command.argv };
    } else {
      state.controlPid = pid;
    }
    save();
    let open = 0;
    let exitInfo = null;
    let finished = false;
    const finish = () => {
      if (finished || exitInfo === null) return;
      finished = true;
      resolveRun(exitInfo);
    };
    for (const stream of [child.stdout, child.stderr]) {
      if (!stream) continue;
      open++;
      const rl = createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY });
      rl.on("line", (line) => appendJournal(name, pid, comm, line, root));
      rl.on("close", () => {
        open--;
        if (open === 0) finish();
      });
    }
    child.on("error", (error) => {
      log(`${name}: Failed at step EXEC spawning ${command.path}: ${error.message}`);
      exitInfo = { status: 203, code: "exited", signal: null, pid, spawnFailed: true };
      finished = true;
      resolveRun(exitInfo);
    });
    child.on("exit", (status, signal) => {
      exitInfo =
        signal !== null
          ? { status: signalNumber(signal), code: "killed", signal, pid }
          : { status: status ?? 0, code: "exited", signal: null, pid };
      // systemd's KillMode=control-group: whatever is left of the group goes too.
      killGroup(pid, "SIGTERM");
      // Grandchildren may hold the pipes open: do not wait for them forever.
      setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        finished = true;
        resolveRun(exitInfo);
      }, 500).unref();
      if (open === 0) finish();
    });
  });
}

function isCleanExit(result) {
  if (result.code === "exited") return result.status === 0;
  return ["SIGHUP", "SIGINT", "SIGTERM", "SIGPIPE"].includes(result.signal);
}

function shouldRestart(clean, result) {
  switch (unit?.restart) {
    case "always":
      return true;
    case "on-success":
      return clean;
    case "on-failure":
      return !clean;
    case "on-abnormal":
      return !clean && result.code !== "exited";
    default:
      return false;
  }
}

function finalize(activeState, subState) {
  phase = "done";
  state.mainPid = 0;
  state.controlPid = 0;
  if (state.startJob === "pending") state.startJob = activeState === "failed" ? "failed" : "done";
  setState(activeState, subState);
  setTimeout(() => process.exit(0), 20);
}

async function waitRestartDelay() {
  await new Promise((resolveWait) => {
    const timer = setTimeout(resolveWait, restartDelayMs);
    wakeRestartWait = () => {
      clearTimeout(timer);
      resolveWait();
    };
  });
  wakeRestartWait = null;
}

function onStopSignal() {
  if (stopRequested) return;
  stopRequested = true;
  if (phase === "auto-restart") {
    wakeRestartWait?.();
    return;
  }
  if (phase === "running" || phase === "start-pre") {
    const pgid = currentPgid;
    const comm = currentComm;
    phase = "stopping";
    log(`Stopping ${label}...`);
    setState("deactivating", "stop-sigterm");
    killGroup(pgid, "SIGTERM");
    setTimeout(async () => {
      if (!groupHasLiveMembers(pgid)) return;
      log(`${name}: State 'stop-sigterm' timed out. Killing.`);
      log(`${name}: Killing process ${pgid} (${comm}) with signal SIGKILL.`);
      state.subState = "stop-sigkill";
      save();
      killGroup(pgid, "SIGKILL");
    }, stopTimeoutMs).unref();
  }
}

process.on("SIGTERM", onStopSignal);
process.on("SIGINT", () => {});
process.on("SIGHUP", () => {});

// Not systemd's: the bench process that made this sandbox (config.json's ownerPid). Once it is gone
// without stopping the host (Ctrl-C on `npm run bench` or the demo, a test process killed), nothing
// would ever stop this unit, and a simulated engine would run on for good: stop it as `systemctl stop`
// does.
const ownerPid = readJsonFile(sandboxPaths(root).configFile, {}).ownerPid;
if (Number.isInteger(ownerPid)) {
  const ownerWatch = setInterval(() => {
    if (isAlive(ownerPid)) return;
    clearInterval(ownerWatch);
    onStopSignal();
  }, 2000);
  ownerWatch.unref();
}

async function main() {
  if (unit === null || unit.execStart === null) {
    log(`${name}: Service has no ExecStart=, ExecStop=, or SuccessAction=. Refusing.`);
    state.startJob = "failed";
    state.result = "resources";
    finalize("failed", "failed");
    return;
  }
  const missingEnvFile = unit.environmentFiles.find((f) => {
    if (f.optional) return false;
    try {
      return !statSync(f.path).isFile();
    } catch {
      return true;
    }
  });
  if (missingEnvFile !== undefined) {
    log(`${name}: Failed to load environment files: No such file or directory`);
    log(`${name}: Failed to run 'start' task: No such file or directory`);
    state.result = "resources";
    log(`${name}: Failed with result 'resources'.`);
    log(`Failed to start ${label}.`);
    state.startJob = "failed-resources";
    finalize("failed", "failed");
    return;
  }
  let first = true;
  state.nRestarts = 0;
  state.result = "success";
  save();
  for (;;) {
    if (stopRequested) {
      log(`Stopped ${label}.`);
      finalize(
        state.result === "success" ? "inactive" : "failed",
        state.result === "success" ? "dead" : "failed",
      );
      return;
    }
    const now = Date.now();
    state.startTimes = state.startTimes.filter((t) => now - t < START_LIMIT_INTERVAL_MS);
    if (state.startTimes.length >= START_LIMIT_BURST) {
      log(`${name}: Start request repeated too quickly.`);
      if (first) state.result = "start-limit-hit";
      log(`${name}: Failed with result '${state.result}'.`);
      log(`Failed to start ${label}.`);
      state.startJob = "failed-limit";
      finalize("failed", "failed");
      return;
    }
    state.startTimes.push(now);
    state.result = "success";
    save();

    let failedResult = null;
    for (const pre of unit.execStartPre) {
      phase = "start-pre";
      setState("activating", "start-pre");
      const r = await runCommand(pre, { main: false });
      await reapGroup(r.pid);
      state.controlPid = 0;
      if (stopRequested) break;
      if (!isCleanExit(r) && !pre.ignoreErrors) {
        log(`${name}: Control process exited, code=${r.code}, status=${formatExitStatus(r.code, r.status)}`);
        failedResult = r.code === "exited" ? "exit-code" : "signal";
        break;
      }
    }
    if (stopRequested) {
      log(`${name}: Deactivated successfully.`);
      log(`Stopped ${label}.`);
      finalize("inactive", "dead");
      return;
    }
    if (failedResult !== null) {
      state.result = failedResult;
      log(`${name}: Failed with result '${failedResult}'.`);
      log(`Failed to start ${label}.`);
      if (state.startJob === "pending") state.startJob = "failed-control";
      if (shouldRestart(false, { code: "exited" })) {
        if (await autoRestart()) {
          first = false;
          continue;
        }
        return;
      }
      finalize("failed", "failed");
      return;
    }

    phase = "running";
    const mainRun = runCommand(unit.execStart, { main: true });
    // Type=simple: the unit is active as soon as the main process is forked.
    state.startJob = "done";
    setState("active", "running");
    log(`Started ${label}.`);
    const r = await mainRun;
    state.execMainExitAt = nowIso();
    state.execMainCode = r.code;
    state.execMainStatus = r.status;
    state.mainPid = 0;
    save();
    await reapGroup(r.pid);
    if (stopRequested) {
      log(`${name}: Deactivated successfully.`);
      log(`Stopped ${label}.`);
      finalize("inactive", "dead");
      return;
    }
    const clean = isCleanExit(r);
    if (clean) {
      log(`${name}: Deactivated successfully.`);
    } else {
      log(`${name}: Main process exited, code=${r.code}, status=${formatExitStatus(r.code, r.status)}`);
      state.result = r.code === "exited" ? "exit-code" : r.signal === "SIGABRT" ? "core-dump" : "signal";
      log(`${name}: Failed with result '${state.result}'.`);
    }
    if (shouldRestart(clean, r)) {
      if (await autoRestart()) {
        first = false;
        continue;
      }
      return;
    }
    if (clean) finalize("inactive", "dead");
    else finalize("failed", "failed");
    return;
  }
}

/** Waits RestartSec in auto-restart; false when a stop request ended the unit meanwhile. */
async function autoRestart() {
  phase = "auto-restart";
  state.mainPid = 0;
  setState("activating", "auto-restart");
  await waitRestartDelay();
  if (stopRequested) {
    log(`Stopped ${label}.`);
    finalize(
      state.result === "success" ? "inactive" : "failed",
      state.result === "success" ? "dead" : "failed",
    );
    return false;
  }
  state.nRestarts += 1;
  log(`${name}: Scheduled restart job, restart counter is at ${state.nRestarts}.`);
  log(`Stopped ${label}.`);
  return true;
}

main().catch((error) => {
  log(`${name}: supervisor error: ${error?.stack ?? error}`);
  state.result = "resources";
  finalize("failed", "failed");
});
