/** systemctl show: a unit's properties, in systemd 255's order and formats. */
import { uptime } from "node:os";
import { dirname } from "node:path";
import { isAlive, processGroupMembers } from "./sandbox.mjs";
import { formatTimeSpan } from "./unit-file.mjs";
import {
  existingLinks,
  formatExitStatus,
  formatTimestamp,
  observedUnitState,
  resolveUnit,
  unitFilePath,
  unitFileState,
} from "./units.mjs";

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
function unitProperties(ctx, name) {
  const { root } = ctx;
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

export function show(ctx, names) {
  const { opts, out } = ctx;
  const wanted = opts.properties.filter((p) => p !== "");
  const blocks = [];
  for (const name of names) {
    const lines = [];
    for (const [key, value] of unitProperties(ctx, name)) {
      if (wanted.length > 0 && !wanted.includes(key)) continue;
      if (wanted.length === 0 && value === "" && !opts.all) continue;
      lines.push(opts.value ? value : `${key}=${value}`);
    }
    blocks.push(lines.join("\n"));
  }
  if (blocks.length > 0) out(`${blocks.join("\n\n")}\n`);
  return 0;
}
