/**
 * Imitates `systemctl` (systemd 255, as on Ubuntu 24.04) for the service units of a simulated GPU
 * host: units are `*.service` files in <root>/etc/systemd/system; starting one spawns a detached
 * unit supervisor (unit-supervisor.mjs) that runs ExecStart as a real process.
 *
 * Verbs: start stop restart try-restart reload-or-restart enable disable is-active is-enabled
 * is-failed reset-failed status show cat kill daemon-reload list-units list-unit-files.
 * Options: --now --value -p/--property -P --all -a --type -t --no-legend --plain --no-pager
 * --quiet -q --full -l --lines -n --no-block --no-reload --signal -s --system --version.
 * Faults (state/faults.json): systemctlFails, daemonReloadFails, restartSec, stopTimeoutSec,
 * strictDaemonReload (see README.md).
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, symlinkSync, unlinkSync } from "node:fs";
import { uptime } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  isAlive,
  processGroupAlive,
  processGroupMembers,
  readConfig,
  readFaults,
  recordCall,
  sandboxPaths,
  sandboxRoot,
  sleep,
  withLock,
} from "./sandbox.mjs";
import { formatTimeSpan } from "./unit-file.mjs";
import {
  enablementLinks,
  existingLinks,
  formatAgo,
  formatExitStatus,
  formatSyslogTime,
  formatTimestamp,
  listUnitFiles,
  normalizeUnitName,
  observedUnitState,
  readUnitState,
  reloadAll,
  resolveUnit,
  signalNumber,
  unitFilePath,
  unitFileState,
  unitLabel,
  writeUnitState,
} from "./units.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const root = sandboxRoot();
const argv = process.argv.slice(2);
recordCall("systemctl", argv, root);

let stdout = "";
let stderr = "";
const out = (text) => {
  stdout += text;
};
const err = (text) => {
  stderr += text;
};

// ---------------------------------------------------------------- option parsing

const opts = {
  now: false,
  value: false,
  properties: [],
  all: false,
  types: [],
  legend: true,
  plain: false,
  quiet: false,
  lines: 10,
  signal: "SIGTERM",
  noReload: false,
  states: [],
};
const positional = [];
let badOption = null;
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  const takeValue = () => {
    const v = argv[i + 1];
    i++;
    return v ?? "";
  };
  if (a === "--") {
    positional.push(...argv.slice(i + 1));
    break;
  }
  if (a === "--now") opts.now = true;
  else if (a === "--value") opts.value = true;
  else if (a === "-p" || a === "--property") opts.properties.push(...takeValue().split(","));
  else if (a.startsWith("--property=")) opts.properties.push(...a.slice(11).split(","));
  else if (a.startsWith("-p") && a.length > 2) opts.properties.push(...a.slice(2).split(","));
  else if (a === "-P") {
    opts.value = true;
    opts.properties.push(...takeValue().split(","));
  } else if (a.startsWith("-P") && a.length > 2) {
    opts.value = true;
    opts.properties.push(...a.slice(2).split(","));
  } else if (a === "-a" || a === "--all") opts.all = true;
  else if (a === "-t" || a === "--type") opts.types.push(...takeValue().split(","));
  else if (a.startsWith("--type=")) opts.types.push(...a.slice(7).split(","));
  else if (a === "--state") opts.states.push(...takeValue().split(","));
  else if (a.startsWith("--state=")) opts.states.push(...a.slice(8).split(","));
  else if (a === "--no-legend") opts.legend = false;
  else if (a === "--legend=false" || a === "--legend=no") opts.legend = false;
  else if (a === "--plain") opts.plain = true;
  else if (a === "-q" || a === "--quiet") opts.quiet = true;
  else if (a === "-n" || a === "--lines") opts.lines = Number(takeValue());
  else if (a.startsWith("--lines=")) opts.lines = Number(a.slice(8));
  else if (a.startsWith("-n") && /^-n\d+$/.test(a)) opts.lines = Number(a.slice(2));
  else if (a === "-s" || a === "--signal") opts.signal = takeValue();
  else if (a.startsWith("--signal=")) opts.signal = a.slice(9);
  else if (a === "--no-reload") opts.noReload = true;
  else if (a === "--version") {
    process.stdout.write("systemd 255 (255.4-1ubuntu8)\n");
    process.exit(0);
  } else if (
    [
      "--no-pager",
      "--no-block",
      "--system",
      "--full",
      "-l",
      "--no-ask-password",
      "--wait",
      "--force",
      "-f",
      "--runtime",
      "--show-types",
    ].includes(a) ||
    a.startsWith("--kill-whom=") ||
    a.startsWith("--output=") ||
    a.startsWith("--job-mode=")
  ) {
    // accepted, no effect in the simulation
  } else if (a.startsWith("-") && a !== "-") {
    badOption = a;
    break;
  } else positional.push(a);
}

const faults = readFaults(root);

function finish(code) {
  process.stdout.write(stdout, () => {
    process.stderr.write(stderr, () => process.exit(code));
  });
  // keep the event loop from running further code
  return new Promise(() => {});
}

/** systemctlFails: ["start", "stop:foo.service", ...] — does this verb (for this unit) fail? */
function verbFails(verb, unit) {
  const list = Array.isArray(faults.systemctlFails) ? faults.systemctlFails : [];
  return list.some((entry) => entry === verb || entry === `${verb}:${unit}`);
}

const SEE = (name) => `See "systemctl status ${name}" and "journalctl -xeu ${name}" for details.\n`;

function reloadWarning(name) {
  err(
    `Warning: The unit file, source configuration file or drop-ins of ${name} changed on disk. Run 'systemctl daemon-reload' to reload units.\n`,
  );
}

// ---------------------------------------------------------------- start / stop

const supervisorScript = join(here, "unit-supervisor.mjs");

async function waitFor(predicate, timeoutMs, intervalMs = 5) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = predicate();
    if (value) return value;
    if (Date.now() > deadline) return null;
    await sleep(intervalMs);
  }
}

async function startUnit(name, verb = "start") {
  const { unit, needDaemonReload } = resolveUnit(root, name);
  if (unit === null) {
    err(`Failed to ${verb} ${name}: Unit ${name} not found.\n`);
    return 5;
  }
  if (needDaemonReload) reloadWarning(name);
  if (unit.execStart === null) {
    err(`Failed to ${verb} ${name}: Unit ${name} has a bad unit file setting.\n`);
    err(`See system logs and 'systemctl status ${name}' for details.\n`);
    return 1;
  }
  if (verbFails(verb, name) || (verb !== "start" && verbFails("start", name))) {
    err(`Job for ${name} failed because the control process exited with error code.\n${SEE(name)}`);
    return 1;
  }
  return await withLock(
    `unit-${name}`,
    async () => {
      const current = readUnitState(root, name);
      if (current !== null && isAlive(current.supervisorPid)) {
        if (["active", "activating", "reloading"].includes(current.activeState)) return 0;
        // deactivating, or a supervisor that is just finishing: let it end first
        await waitFor(() => !isAlive(current.supervisorPid), 15_000, 10);
      }
      const invocationId = randomBytes(16).toString("hex");
      const child = spawn(process.execPath, [supervisorScript, root, name, invocationId], {
        detached: true,
        stdio: "ignore",
        env: { ...process.env, MODELSWAP_SANDBOX: root },
      });
      child.unref();
      const state = await waitFor(() => {
        const s = readUnitState(root, name);
        return s !== null && s.invocationId === invocationId && s.startJob !== "pending" ? s : null;
      }, 30_000);
      if (state === null) {
        err(`Job for ${name} failed because a timeout was exceeded.\n${SEE(name)}`);
        return 1;
      }
      if (state.startJob === "done") return 0;
      if (state.startJob === "failed-resources") {
        err(`Job for ${name} failed because of unavailable resources or another system error.\n${SEE(name)}`);
      } else if (state.startJob === "failed-control") {
        err(`Job for ${name} failed because the control process exited with error code.\n${SEE(name)}`);
      } else {
        err(`Job for ${name} failed.\n${SEE(name)}`);
      }
      return 1;
    },
    { root },
  );
}

async function stopUnit(name, verb = "stop") {
  const { unit, needDaemonReload } = resolveUnit(root, name, { recordFirstLoad: false });
  const existing = readUnitState(root, name);
  if (unit === null && existing === null) {
    err(`Failed to ${verb} ${name}: Unit ${name} not loaded.\n`);
    return 5;
  }
  if (needDaemonReload) reloadWarning(name);
  if (verbFails("stop", name)) {
    err(`Failed to stop ${name}: Connection timed out\n`);
    return 1;
  }
  return await withLock(
    `unit-${name}`,
    async () => {
      const state = readUnitState(root, name);
      if (state === null) return 0;
      if (isAlive(state.supervisorPid)) {
        try {
          process.kill(state.supervisorPid, "SIGTERM");
        } catch {
          // it just ended
        }
        const stopTimeout = typeof faults.stopTimeoutSec === "number" ? faults.stopTimeoutSec * 1000 : 5000;
        await waitFor(() => !isAlive(state.supervisorPid), stopTimeout + 5000, 10);
        return 0;
      }
      // No supervisor (it was killed): clean up an orphaned main process group ourselves.
      if (state.mainPid > 0 && processGroupAlive(state.mainPid)) {
        try {
          process.kill(-state.mainPid, "SIGTERM");
        } catch {
          // gone
        }
        if (!(await waitFor(() => !processGroupAlive(state.mainPid), 5000, 20))) {
          try {
            process.kill(-state.mainPid, "SIGKILL");
          } catch {
            // gone
          }
        }
      }
      if (["active", "activating", "deactivating"].includes(state.activeState)) {
        const at = new Date().toISOString();
        writeUnitState(root, name, {
          ...state,
          activeState: "inactive",
          subState: "dead",
          mainPid: 0,
          controlPid: 0,
          inactiveEnterAt: at,
          stateChangeAt: at,
        });
      }
      return 0;
    },
    { root },
  );
}

// ---------------------------------------------------------------- enable / disable

function enableUnits(names) {
  let code = 0;
  const toStart = [];
  for (const name of names) {
    const { unit } = resolveUnit(root, name);
    if (unit === null) {
      err(`Failed to enable unit: Unit file ${name} does not exist.\n`);
      return { code: 1, toStart: [] };
    }
    if (verbFails("enable", name)) {
      err(`Failed to enable unit: Access denied\n`);
      return { code: 1, toStart: [] };
    }
    if (!unit.hasInstall) {
      err(
        "The unit files have no installation config (WantedBy=, RequiredBy=, UpheldBy=,\n" +
          "Also=, or Alias= settings in the [Install] section, and DefaultInstance= for\n" +
          "template units). This means they are not meant to be enabled or disabled using systemctl.\n",
      );
    }
    for (const link of enablementLinks(root, unit)) {
      if (existingLinks(root, name).includes(link)) continue;
      mkdirSync(dirname(link), { recursive: true });
      try {
        symlinkSync(unitFilePath(root, name), link);
        err(`Created symlink ${link} → ${unitFilePath(root, name)}.\n`);
      } catch (error) {
        if (error?.code !== "EEXIST") {
          err(`Failed to enable unit: ${error.message}\n`);
          code = 1;
        }
      }
    }
    toStart.push(name);
  }
  if (!opts.noReload) reloadAll(root);
  return { code, toStart };
}

function disableUnits(names) {
  const done = [];
  for (const name of names) {
    const { unit } = resolveUnit(root, name, { recordFirstLoad: false });
    if (unit === null && existingLinks(root, name).length === 0) {
      err(`Failed to disable unit: Unit file ${name} does not exist.\n`);
      return { code: 1, done: [] };
    }
    if (verbFails("disable", name)) {
      err(`Failed to disable unit: Access denied\n`);
      return { code: 1, done: [] };
    }
    for (const link of existingLinks(root, name)) {
      try {
        unlinkSync(link);
        err(`Removed "${link}".\n`);
      } catch {
        // a concurrent disable removed it
      }
    }
    done.push(name);
  }
  if (!opts.noReload) reloadAll(root);
  return { code: 0, done };
}

// ---------------------------------------------------------------- show

const bootMs = Date.now() - uptime() * 1000;
const monotonic = (iso) =>
  iso ? String(Math.max(0, Math.round((new Date(iso).getTime() - bootMs) * 1000))) : "0";

function quoteEnv(key, value) {
  const kv = `${key}=${value}`;
  return /[\s"'\\]/.test(kv) ? `"${kv.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"` : kv;
}

function execCommandProperty(cmd, st, isMain) {
  const started = isMain && st.execMainStartAt ? formatTimestamp(st.execMainStartAt) : "n/a";
  const stopped = isMain && st.execMainExitAt ? formatTimestamp(st.execMainExitAt) : "n/a";
  const pid = isMain ? st.execMainPid : 0;
  const code = isMain && st.execMainCode ? st.execMainCode : "(null)";
  const status = isMain ? st.execMainStatus : 0;
  const statusText =
    code === "exited"
      ? `${status}`
      : `${status}/${status === 0 ? "0" : formatExitStatus("killed", status).split("/")[1]}`;
  return `{ path=${cmd.path} ; argv[]=${cmd.argv.join(" ")} ; ignore_errors=${cmd.ignoreErrors ? "yes" : "no"} ; start_time=[${started}] ; stop_time=[${stopped}] ; pid=${pid} ; code=${code} ; status=${statusText} }`;
}

/** Ordered [key, value] pairs like `systemctl show` (Service interface first, then Unit). */
function unitProperties(name) {
  const { unit, needDaemonReload } = resolveUnit(root, name, { recordFirstLoad: false });
  const st = observedUnitState(root, name);
  const found = unit !== null;
  const running = st.mainPid > 0 && isAlive(st.mainPid);
  const env = unit ? Object.entries(unit.environment).map(([k, v]) => quoteEnv(k, v)) : [];
  const execCode = st.execMainCode === "exited" ? "1" : st.execMainCode === "killed" ? "2" : "0";
  const fileState = unitFileState(root, name, unit);
  const enabledBy = existingLinks(root, name).map((l) =>
    dirname(l)
      .split("/")
      .pop()
      .replace(/\.(wants|requires)$/, ""),
  );
  const props = [
    ["Type", unit?.type ?? "simple"],
    ["ExitType", "main"],
    ["Restart", unit?.restart ?? "no"],
    ["NotifyAccess", "none"],
    ["RestartUSec", formatTimeSpan(unit?.restartMs ?? 100)],
    ["TimeoutStartUSec", formatTimeSpan(unit?.timeoutStartMs ?? 90_000)],
    ["TimeoutStopUSec", formatTimeSpan(unit?.timeoutStopMs ?? 90_000)],
    ["RuntimeMaxUSec", "infinity"],
    ["RemainAfterExit", "no"],
    ["GuessMainPID", "yes"],
    ["MainPID", String(running ? st.mainPid : 0)],
    ["ControlPID", String(st.controlPid > 0 && isAlive(st.controlPid) ? st.controlPid : 0)],
    ["StatusErrno", "0"],
    ["Result", st.result],
    ["ReloadResult", "success"],
    ["CleanResult", "success"],
    ["UID", "[not set]"],
    ["GID", "[not set]"],
    ["NRestarts", String(st.nRestarts)],
    ["OOMPolicy", "stop"],
    ["ExecMainStartTimestamp", formatTimestamp(st.execMainStartAt)],
    ["ExecMainStartTimestampMonotonic", monotonic(st.execMainStartAt)],
    ["ExecMainExitTimestamp", formatTimestamp(st.execMainExitAt)],
    ["ExecMainExitTimestampMonotonic", monotonic(st.execMainExitAt)],
    ["ExecMainPID", String(st.execMainPid)],
    ["ExecMainCode", execCode],
    ["ExecMainStatus", String(st.execMainStatus)],
  ];
  if (unit) {
    for (const pre of unit.execStartPre) props.push(["ExecStartPre", execCommandProperty(pre, st, false)]);
    if (unit.execStart) props.push(["ExecStart", execCommandProperty(unit.execStart, st, true)]);
  }
  props.push(
    ["Slice", found ? "system.slice" : ""],
    ["ControlGroup", running ? `/system.slice/${name}` : ""],
    ["MemoryCurrent", "[not set]"],
    ["TasksCurrent", running ? String(processGroupMembers(st.mainPid).length) : "[not set]"],
    ["Environment", env.join(" ")],
    [
      "EnvironmentFiles",
      unit
        ? unit.environmentFiles.map((f) => `${f.path} (ignore_errors=${f.optional ? "yes" : "no"})`).join(" ")
        : "",
    ],
    ["UMask", "0022"],
    ["WorkingDirectory", unit?.workingDirectory ?? ""],
    ["User", unit?.user ?? ""],
    ["KillMode", "control-group"],
    ["KillSignal", "15"],
    ["Id", name],
    ["Names", name],
    ["Requires", found ? "sysinit.target system.slice" : ""],
    ["WantedBy", enabledBy.join(" ")],
    ["After", found ? "basic.target sysinit.target system.slice systemd-journald.socket network.target" : ""],
    ["Description", unit?.description || name],
    ["LoadState", found ? (unit.execStart === null ? "bad-setting" : "loaded") : "not-found"],
    ["ActiveState", st.activeState],
    ["FreezerState", "running"],
    ["SubState", st.subState],
    ["FragmentPath", found ? unitFilePath(root, name) : ""],
    ["UnitFileState", fileState],
    ["UnitFilePreset", found ? "enabled" : ""],
    ["StateChangeTimestamp", formatTimestamp(st.stateChangeAt)],
    ["StateChangeTimestampMonotonic", monotonic(st.stateChangeAt)],
    ["InactiveExitTimestamp", formatTimestamp(st.inactiveExitAt)],
    ["InactiveExitTimestampMonotonic", monotonic(st.inactiveExitAt)],
    ["ActiveEnterTimestamp", formatTimestamp(st.activeEnterAt)],
    ["ActiveEnterTimestampMonotonic", monotonic(st.activeEnterAt)],
    ["ActiveExitTimestamp", formatTimestamp(st.activeExitAt)],
    ["ActiveExitTimestampMonotonic", monotonic(st.activeExitAt)],
    ["InactiveEnterTimestamp", formatTimestamp(st.inactiveEnterAt)],
    ["InactiveEnterTimestampMonotonic", monotonic(st.inactiveEnterAt)],
    ["CanStart", found ? "yes" : "no"],
    ["CanStop", "yes"],
    ["CanReload", "no"],
    ["NeedDaemonReload", needDaemonReload ? "yes" : "no"],
    ["StartLimitIntervalUSec", "10s"],
    ["StartLimitBurst", "5"],
    ["InvocationID", st.invocationId ?? ""],
  );
  if (!found) props.push(["LoadError", `org.freedesktop.systemd1.NoSuchUnit "Unit ${name} not found."`]);
  return props;
}

function show(names) {
  const wanted = opts.properties.filter((p) => p !== "");
  const blocks = [];
  for (const name of names) {
    const lines = [];
    for (const [key, value] of unitProperties(name)) {
      if (wanted.length > 0 && !wanted.includes(key)) continue;
      if (wanted.length === 0 && value === "" && !opts.all) continue;
      lines.push(opts.value ? value : `${key}=${value}`);
    }
    blocks.push(lines.join("\n"));
  }
  if (blocks.length > 0) out(`${blocks.join("\n\n")}\n`);
  return 0;
}

// ---------------------------------------------------------------- status

function cmdline(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean).join(" ");
  } catch {
    return "";
  }
}

function journalTail(name, n) {
  const hostname = readConfig(root).name ?? "gpu-host";
  let text = "";
  try {
    text = readFileSync(join(sandboxPaths(root).journalDir, `${name}.log`), "utf8");
  } catch {
    return [];
  }
  return text
    .split("\n")
    .filter((l) => l !== "")
    .slice(-n)
    .map((line) => {
      const [iso, pid, comm, ...rest] = line.split("\t");
      return `${formatSyslogTime(new Date(iso))} ${hostname} ${comm}[${pid}]: ${rest.join("\t")}`;
    });
}

function status(names) {
  let code = 0;
  const blocks = [];
  for (const name of names) {
    const { unit, needDaemonReload } = resolveUnit(root, name, { recordFirstLoad: false });
    const st = observedUnitState(root, name);
    if (unit === null && readUnitState(root, name) === null) {
      err(`Unit ${name} could not be found.\n`);
      code = 4;
      continue;
    }
    const lines = [];
    const bullet = st.activeState === "active" ? "●" : st.activeState === "failed" ? "×" : "○";
    lines.push(`${bullet} ${unitLabel(unit, name)}`);
    if (unit) {
      lines.push(
        `     Loaded: loaded (${unitFilePath(root, name)}; ${unitFileState(root, name, unit)}; preset: enabled)`,
      );
    } else {
      lines.push("     Loaded: not-found (Reason: Unit " + name + " not found.)");
    }
    const since = (iso) => (iso ? ` since ${formatTimestamp(iso)}; ${formatAgo(iso)}` : "");
    const resultPart = st.result !== "success" ? ` (Result: ${st.result})` : "";
    let activeLine;
    if (st.activeState === "active") activeLine = `active (running)${since(st.activeEnterAt)}`;
    else if (st.activeState === "failed") activeLine = `failed${resultPart}${since(st.inactiveEnterAt)}`;
    else if (st.activeState === "activating")
      activeLine = `activating (${st.subState})${resultPart}${since(st.stateChangeAt)}`;
    else if (st.activeState === "deactivating")
      activeLine = `deactivating (${st.subState})${since(st.stateChangeAt)}`;
    else activeLine = `inactive (dead)${st.inactiveEnterAt ? since(st.inactiveEnterAt) : ""}`;
    lines.push(`     Active: ${activeLine}`);
    const exitText =
      st.execMainCode === "killed"
        ? `code=killed, signal=${formatExitStatus("killed", st.execMainStatus).split("/")[1]}`
        : `code=exited, status=${formatExitStatus("exited", st.execMainStatus)}`;
    if (st.mainPid > 0 && isAlive(st.mainPid)) {
      lines.push(
        `   Main PID: ${st.mainPid} (${unit?.execStart ? unit.execStart.path.split("/").pop() : "?"})`,
      );
      const members = processGroupMembers(st.mainPid);
      lines.push(`      Tasks: ${members.length}`);
      lines.push(`     CGroup: /system.slice/${name}`);
      members.forEach((m, idx) => {
        const branch = idx === members.length - 1 ? "└─" : "├─";
        lines.push(`             ${branch}${m.pid} ${cmdline(m.pid)}`);
      });
    } else if (st.execMainPid > 0 && st.execMainCode) {
      const cmd = st.execStart ? st.execStart.argv.join(" ") : "";
      lines.push(`    Process: ${st.execMainPid} ExecStart=${cmd} (${exitText})`);
      lines.push(`   Main PID: ${st.execMainPid} (${exitText})`);
    }
    if (needDaemonReload) {
      lines.push("");
      lines.push(
        `Warning: The unit file, source configuration file or drop-ins of ${name} changed on disk. Run 'systemctl daemon-reload' to reload units.`,
      );
    }
    const journal = journalTail(name, Number.isFinite(opts.lines) ? opts.lines : 10);
    if (journal.length > 0 && opts.lines > 0) {
      lines.push("");
      lines.push(...journal);
    }
    blocks.push(lines.join("\n"));
    if (st.activeState !== "active") code = Math.max(code, 3);
  }
  if (blocks.length > 0) out(`${blocks.join("\n\n")}\n`);
  return code;
}

// ---------------------------------------------------------------- listings

function globToRegExp(glob) {
  const escaped = glob
    .replace(/[.+^${}()|\\]/g, "\\$&")
    .replace(/\*/g, ".*")
    .replace(/\?/g, ".");
  return new RegExp(`^${escaped}$`);
}

function matchesPatterns(name, patterns) {
  if (patterns.length === 0) return true;
  return patterns.some((p) => globToRegExp(p).test(name) || globToRegExp(normalizeUnitName(p)).test(name));
}

function knownUnits() {
  const names = new Set(listUnitFiles(root));
  for (const f of readdirSyncSafe(sandboxPaths(root).unitsStateDir)) {
    if (f.endsWith(".service.json")) names.add(f.slice(0, -5));
  }
  return [...names].sort();
}

function readdirSyncSafe(dir) {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function columns(rows) {
  const widths = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  }
  return rows.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i])))
      .join(" ")
      .trimEnd(),
  );
}

function typeFilterOk() {
  return opts.types.length === 0 || opts.types.includes("service");
}

function listUnits(patterns) {
  const rows = [];
  const failedFlags = [];
  if (typeFilterOk()) {
    for (const name of knownUnits()) {
      if (!matchesPatterns(name, patterns)) continue;
      const { unit } = resolveUnit(root, name, { recordFirstLoad: false });
      const st = observedUnitState(root, name);
      const load = unit === null ? "not-found" : "loaded";
      if (!opts.all && st.activeState === "inactive") continue;
      if (
        opts.states.length > 0 &&
        !opts.states.includes(st.activeState) &&
        !opts.states.includes(st.subState)
      )
        continue;
      rows.push([name, load, st.activeState, st.subState, unit?.description || name]);
      failedFlags.push(st.activeState === "failed" || load === "not-found");
    }
  }
  const header = ["UNIT", "LOAD", "ACTIVE", "SUB", "DESCRIPTION"];
  const table = columns(opts.legend ? [header, ...rows] : rows);
  const lines = table.map((line, idx) => {
    if (opts.plain) return line;
    const dataIdx = opts.legend ? idx - 1 : idx;
    return `${dataIdx >= 0 && failedFlags[dataIdx] ? "●" : " "} ${line}`;
  });
  if (lines.length > 0) out(`${lines.join("\n")}\n`);
  if (opts.legend) {
    out("\nLOAD   = Reflects whether the unit definition was properly loaded.\n");
    out("ACTIVE = The high-level unit activation state, i.e. generalization of SUB.\n");
    out("SUB    = The low-level unit activation state, values depend on unit type.\n");
    out(`\n${rows.length} loaded units listed.`);
    out(
      opts.all
        ? "\nTo show all installed unit files use 'systemctl list-unit-files'.\n"
        : " Pass --all to see loaded but inactive units, too.\nTo show all installed unit files use 'systemctl list-unit-files'.\n",
    );
  }
  return 0;
}

function listUnitFilesCmd(patterns) {
  const rows = [];
  if (typeFilterOk()) {
    for (const name of listUnitFiles(root)) {
      if (!matchesPatterns(name, patterns)) continue;
      const { unit } = resolveUnit(root, name, { recordFirstLoad: false });
      const state = unitFileState(root, name, unit);
      if (opts.states.length > 0 && !opts.states.includes(state)) continue;
      rows.push([name, state, state === "static" ? "-" : "enabled"]);
    }
  }
  const table = columns(opts.legend ? [["UNIT FILE", "STATE", "PRESET"], ...rows] : rows);
  if (table.length > 0) out(`${table.join("\n")}\n`);
  if (opts.legend) out(`\n${rows.length} unit files listed.\n`);
  return 0;
}

// ---------------------------------------------------------------- dispatch

async function main() {
  if (badOption !== null) {
    err(`systemctl: unrecognized option '${badOption}'\n`);
    return 1;
  }
  const verb = positional[0] ?? "list-units";
  const args = positional.slice(1);
  const names = args.map(normalizeUnitName);
  const needUnits = () => {
    if (names.length === 0) {
      err(`Too few arguments.\n`);
      return false;
    }
    return true;
  };
  switch (verb) {
    case "daemon-reload":
    case "daemon-reexec": {
      if (faults.daemonReloadFails === true || verbFails("daemon-reload", "")) {
        err("Failed to reload daemon: Connection timed out\n");
        return 1;
      }
      reloadAll(root);
      return 0;
    }
    case "start": {
      if (!needUnits()) return 1;
      let code = 0;
      for (const name of names) code = Math.max(code, await startUnit(name));
      return code;
    }
    case "stop": {
      if (!needUnits()) return 1;
      let code = 0;
      for (const name of names) code = Math.max(code, await stopUnit(name));
      return code;
    }
    case "restart":
    case "reload-or-restart":
    case "try-restart": {
      if (!needUnits()) return 1;
      let code = 0;
      for (const name of names) {
        const { unit } = resolveUnit(root, name);
        if (unit === null) {
          err(`Failed to ${verb} ${name}: Unit ${name} not found.\n`);
          code = Math.max(code, 5);
          continue;
        }
        if (verbFails("restart", name)) {
          err(`Job for ${name} failed because the control process exited with error code.\n${SEE(name)}`);
          code = Math.max(code, 1);
          continue;
        }
        const wasActive = observedUnitState(root, name).activeState === "active";
        if (verb === "try-restart" && !wasActive) continue;
        await stopUnit(name, verb);
        code = Math.max(code, await startUnit(name, verb));
      }
      return code;
    }
    case "enable": {
      if (!needUnits()) return 1;
      const { code, toStart } = enableUnits(names);
      if (code !== 0 || !opts.now) return code;
      let startCode = 0;
      for (const name of toStart) startCode = Math.max(startCode, await startUnit(name));
      return startCode;
    }
    case "disable": {
      if (!needUnits()) return 1;
      const { code, done } = disableUnits(names);
      if (code !== 0 || !opts.now) return code;
      let stopCode = 0;
      for (const name of done) stopCode = Math.max(stopCode, await stopUnit(name));
      return stopCode;
    }
    case "is-active": {
      if (!needUnits()) return 1;
      let any = false;
      for (const name of names) {
        const st = observedUnitState(root, name);
        if (st.activeState === "active") any = true;
        if (!opts.quiet) out(`${st.activeState}\n`);
      }
      return any ? 0 : 3;
    }
    case "is-failed": {
      if (!needUnits()) return 1;
      let any = false;
      for (const name of names) {
        const st = observedUnitState(root, name);
        if (st.activeState === "failed") any = true;
        if (!opts.quiet) out(`${st.activeState}\n`);
      }
      return any ? 0 : 1;
    }
    case "is-enabled": {
      if (!needUnits()) return 1;
      let code = 1;
      for (const name of names) {
        const { unit } = resolveUnit(root, name, { recordFirstLoad: false });
        if (unit === null) {
          err(`Failed to get unit file state for ${name}: No such file or directory\n`);
          continue;
        }
        const state = unitFileState(root, name, unit);
        if (state !== "disabled") code = 0;
        if (!opts.quiet) out(`${state}\n`);
      }
      return code;
    }
    case "reset-failed": {
      const targets = names.length > 0 ? names : knownUnits();
      for (const name of targets) {
        await withLock(
          `unit-${name}`,
          async () => {
            const st = readUnitState(root, name);
            if (st === null) return;
            if (isAlive(st.supervisorPid) && st.activeState !== "failed") {
              writeUnitState(root, name, { ...st, startTimes: [] });
              return;
            }
            const reset = { ...st, startTimes: [], result: "success" };
            if (st.activeState === "failed") {
              reset.activeState = "inactive";
              reset.subState = "dead";
              reset.stateChangeAt = new Date().toISOString();
            }
            writeUnitState(root, name, reset);
          },
          { root },
        );
      }
      return 0;
    }
    case "show": {
      const targets = names.length > 0 ? names : [];
      if (targets.length === 0) {
        // Manager properties: a minimal, plausible set.
        out("Version=255.4-1ubuntu8\nArchitecture=x86-64\nSystemState=running\n");
        return 0;
      }
      return show(targets);
    }
    case "status":
      return status(names.length > 0 ? names : knownUnits());
    case "cat": {
      if (!needUnits()) return 1;
      let code = 0;
      const blocks = [];
      for (const name of names) {
        try {
          const text = readFileSync(unitFilePath(root, name), "utf8");
          blocks.push(`# ${unitFilePath(root, name)}\n${text.endsWith("\n") ? text : `${text}\n`}`);
        } catch {
          err(`No files found for ${name}.\n`);
          code = 1;
        }
      }
      out(blocks.join("\n"));
      return code;
    }
    case "kill": {
      if (!needUnits()) return 1;
      const signal = opts.signal.startsWith("SIG")
        ? opts.signal
        : /^\d+$/.test(opts.signal)
          ? Number(opts.signal)
          : `SIG${opts.signal}`;
      if (typeof signal === "string" && signalNumber(signal) === 0 && signal !== "SIGCONT") {
        err(`Failed to parse signal string ${opts.signal}.\n`);
        return 1;
      }
      for (const name of names) {
        const st = observedUnitState(root, name);
        if (st.mainPid > 0) {
          try {
            process.kill(-st.mainPid, signal);
          } catch {
            // already gone
          }
        }
      }
      return 0;
    }
    case "list-units":
      return listUnits(args);
    case "list-unit-files":
      return listUnitFilesCmd(args);
    default:
      err(`Unknown command verb '${verb}'.\n`);
      return 1;
  }
}

main()
  .then((code) => finish(code))
  .catch((error) => {
    err(`systemctl: ${error?.message ?? error}\n`);
    return finish(1);
  });
