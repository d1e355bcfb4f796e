/** systemctl status: the unit's state, its process tree and the tail of its journal. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { isAlive, processGroupMembers, readConfig, sandboxPaths } from "./sandbox.mjs";
import {
  formatAgo,
  formatExitStatus,
  formatSyslogTime,
  formatTimestamp,
  observedUnitState,
  readUnitState,
  resolveUnit,
  unitFilePath,
  unitFileState,
  unitLabel,
} from "./units.mjs";

function cmdline(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean).join(" ");
  } catch {
    return "";
  }
}

function journalTail(ctx, name, n) {
  const { root } = ctx;
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

export function status(ctx, names) {
  const { root, opts, out, err } = ctx;
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
    const journal = journalTail(ctx, name, Number.isFinite(opts.lines) ? opts.lines : 10);
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
