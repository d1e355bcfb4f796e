/**
 * The simulated systemd's unit model, shared by the systemctl shim and the unit supervisor
 * (not a command itself): unit names, unit files, the "loaded" snapshot kept by daemon-reload,
 * runtime state files, enablement symlinks and systemd's text formats (timestamps, exit statuses).
 */
import { lstatSync, readdirSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import {
  appendJournal,
  isAlive,
  readFaults,
  readJsonFile,
  sandboxPaths,
  writeJsonAtomic,
} from "./sandbox.mjs";
import { interpretUnit, loadUnitFile } from "./unit-file.mjs";

/** Start rate limit (systemd defaults DefaultStartLimitIntervalSec=10s, DefaultStartLimitBurst=5). */
export const START_LIMIT_INTERVAL_MS = 10_000;
export const START_LIMIT_BURST = 5;

/** "foo" -> "foo.service"; names with a known unit suffix are kept. */
export function normalizeUnitName(arg) {
  if (/\.(service|socket|target|timer|mount|path|slice|scope|device|swap|automount)$/.test(arg)) return arg;
  return `${arg}.service`;
}

export function unitFilePath(root, name) {
  return join(sandboxPaths(root).unitDir, name);
}

/** Unit files present in the unit directory (regular files and symlinks named *.service). */
export function listUnitFiles(root) {
  try {
    return readdirSync(sandboxPaths(root).unitDir)
      .filter((n) => n.endsWith(".service"))
      .sort();
  } catch {
    return [];
  }
}

/** The snapshot systemd "loaded" for a unit: { text, mtimeMs } or null. */
export function readLoaded(root, name) {
  return readJsonFile(join(sandboxPaths(root).loadedDir, `${name}.json`), null);
}

/** Records the current unit file as loaded (daemon-reload, or first reference of a unit). */
export function recordLoaded(root, name, unit) {
  writeJsonAtomic(join(sandboxPaths(root).loadedDir, `${name}.json`), {
    text: unit.text,
    mtimeMs: unit.mtimeMs,
    at: new Date().toISOString(),
  });
}

/** daemon-reload: snapshot every unit file. */
export function reloadAll(root) {
  for (const name of listUnitFiles(root)) {
    const unit = loadUnitFile(unitFilePath(root, name), name);
    if (unit !== null) recordLoaded(root, name, unit);
  }
}

/**
 * Resolves a unit for use: { unit, loaded, needDaemonReload }. `unit` is null when the unit
 * file does not exist (and no running instance keeps it loaded). A unit never seen before is
 * loaded on first reference like systemd does. With the fault `strictDaemonReload`, a unit whose
 * file changed since the last daemon-reload runs with the loaded (old) definition, as systemd does.
 */
export function resolveUnit(root, name, { recordFirstLoad = true } = {}) {
  const path = unitFilePath(root, name);
  const onDisk = loadUnitFile(path, name);
  const loaded = readLoaded(root, name);
  if (onDisk === null) {
    const state = readUnitState(root, name);
    if (loaded !== null && state !== null && state.activeState !== "inactive") {
      return { unit: interpretUnit(loaded.text, path, name, loaded.mtimeMs), loaded, needDaemonReload: true };
    }
    return { unit: null, loaded, needDaemonReload: false };
  }
  if (loaded === null) {
    if (recordFirstLoad) recordLoaded(root, name, onDisk);
    return { unit: onDisk, loaded: null, needDaemonReload: false };
  }
  const needDaemonReload = loaded.mtimeMs !== onDisk.mtimeMs || loaded.text !== onDisk.text;
  if (needDaemonReload && readFaults(root).strictDaemonReload === true) {
    return { unit: interpretUnit(loaded.text, path, name, loaded.mtimeMs), loaded, needDaemonReload };
  }
  return { unit: onDisk, loaded, needDaemonReload };
}

export function unitStatePath(root, name) {
  return join(sandboxPaths(root).unitsStateDir, `${name}.json`);
}

/** A fresh, never-started state. */
export function emptyUnitState(name) {
  return {
    unit: name,
    invocationId: "",
    supervisorPid: 0,
    activeState: "inactive",
    subState: "dead",
    result: "success",
    mainPid: 0,
    controlPid: 0,
    execMainPid: 0,
    execMainCode: "",
    execMainStatus: 0,
    execMainStartAt: null,
    execMainExitAt: null,
    activeEnterAt: null,
    activeExitAt: null,
    inactiveEnterAt: null,
    inactiveExitAt: null,
    stateChangeAt: null,
    nRestarts: 0,
    startTimes: [],
    execStart: null,
    pgids: [],
  };
}

/** Raw state file of a unit, or null. */
export function readUnitState(root, name) {
  return readJsonFile(unitStatePath(root, name), null);
}

export function writeUnitState(root, name, state) {
  writeJsonAtomic(unitStatePath(root, name), state);
}

/**
 * The state as observers should see it: a unit whose supervisor died while the unit was
 * running (killed from outside) is reported dead unless its main process still runs.
 */
export function observedUnitState(root, name) {
  const state = readUnitState(root, name) ?? emptyUnitState(name);
  const running = ["active", "activating", "deactivating", "reloading"].includes(state.activeState);
  if (running && !isAlive(state.supervisorPid)) {
    if (state.mainPid > 0 && isAlive(state.mainPid)) return state;
    return { ...state, activeState: "inactive", subState: "dead", mainPid: 0, controlPid: 0 };
  }
  return state;
}

/** The "<target>.wants" / "<target>.requires" symlink paths enabling a unit. */
export function enablementLinks(root, unit) {
  const dir = sandboxPaths(root).unitDir;
  return [
    ...unit.wantedBy.map((t) => join(dir, `${t}.wants`, unit.name)),
    ...unit.requiredBy.map((t) => join(dir, `${t}.requires`, unit.name)),
  ];
}

function linkExists(path) {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** Every existing enablement symlink for a unit name, whatever target it was linked from. */
export function existingLinks(root, name) {
  const dir = sandboxPaths(root).unitDir;
  const found = [];
  let entries = [];
  try {
    entries = readdirSync(dir);
  } catch {
    return found;
  }
  for (const entry of entries) {
    if (!entry.endsWith(".wants") && !entry.endsWith(".requires")) continue;
    const link = join(dir, entry, name);
    if (linkExists(link)) found.push(link);
  }
  return found;
}

/** "enabled" | "disabled" | "static" | "" (not found) — systemd's UnitFileState. */
export function unitFileState(root, name, unit) {
  if (unit === null) return "";
  if (existingLinks(root, name).length > 0) return "enabled";
  if (!unit.hasInstall) return "static";
  return "disabled";
}

/** Where a symlink points (for messages), or "". */
export function linkTarget(path) {
  try {
    return readlinkSync(path);
  } catch {
    return "";
  }
}

const WEEKDAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

function pad2(n) {
  return String(n).padStart(2, "0");
}

/** systemd's timestamp format in UTC: "Sun 2026-11-29 22:19:18 UTC"; "" for null. */
export function formatTimestamp(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return `${WEEKDAYS[d.getUTCDay()]} ${d.getUTCFullYear()}-${pad2(d.getUTCMonth() + 1)}-${pad2(d.getUTCDate())} ${pad2(
    d.getUTCHours(),
  )}:${pad2(d.getUTCMinutes())}:${pad2(d.getUTCSeconds())} UTC`;
}

/** syslog-style "Nov 29 22:19:18" (UTC), as journalctl's short output prints. */
export function formatSyslogTime(d) {
  return `${MONTHS[d.getUTCMonth()]} ${pad2(d.getUTCDate())} ${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}:${pad2(
    d.getUTCSeconds(),
  )}`;
}

/** "5min ago", "2s ago", "1h 3min ago" as systemctl status prints after a timestamp. */
export function formatAgo(iso, now = Date.now()) {
  if (!iso) return "";
  let s = Math.max(0, Math.floor((now - new Date(iso).getTime()) / 1000));
  if (s < 1) return `${Math.max(0, now - new Date(iso).getTime())}ms ago`;
  const parts = [];
  for (const [unit, size] of [
    ["d", 86_400],
    ["h", 3600],
    ["min", 60],
    ["s", 1],
  ]) {
    if (s >= size) {
      parts.push(`${Math.floor(s / size)}${unit}`);
      s %= size;
    }
    if (parts.length === 2) break;
  }
  return `${parts.join(" ")} ago`;
}

const EXIT_NAMES = {
  0: "SUCCESS",
  1: "FAILURE",
  2: "INVALIDARGUMENT",
  3: "NOTIMPLEMENTED",
  4: "NOPERMISSION",
  5: "NOTINSTALLED",
  6: "NOTCONFIGURED",
  7: "NOTRUNNING",
  200: "CHDIR",
  203: "EXEC",
  209: "STDOUT",
  217: "USER",
};

const SIGNAL_NUMBERS = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGILL: 4,
  SIGTRAP: 5,
  SIGABRT: 6,
  SIGBUS: 7,
  SIGFPE: 8,
  SIGKILL: 9,
  SIGUSR1: 10,
  SIGSEGV: 11,
  SIGUSR2: 12,
  SIGPIPE: 13,
  SIGALRM: 14,
  SIGTERM: 15,
};

export function signalNumber(name) {
  return SIGNAL_NUMBERS[name] ?? 0;
}

export function signalName(number) {
  for (const [name, n] of Object.entries(SIGNAL_NUMBERS)) if (n === number) return name;
  return `SIG${number}`;
}

/** "status=1/FAILURE" / "status=9/KILL" parts as systemd logs them. */
export function formatExitStatus(code, status) {
  if (code === "exited") return `${status}/${EXIT_NAMES[status] ?? "n/a"}`;
  return `${status}/${signalName(status).replace(/^SIG/, "")}`;
}

/** "x.service - Description" or just "x.service" when there is no description. */
export function unitLabel(unit, name) {
  const description = unit?.description ?? "";
  return description === "" || description === name ? name : `${name} - ${description}`;
}

/** Appends a message from "systemd[1]" to a unit's journal. */
export function systemdLog(root, name, message) {
  appendJournal(name, 1, "systemd", message, root);
}
