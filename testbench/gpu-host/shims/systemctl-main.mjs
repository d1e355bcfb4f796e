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
 *
 * This module reads the command line and dispatches the verbs (runSystemctl); they live in
 * systemctl-jobs.mjs (start, stop), systemctl-enable.mjs, systemctl-show.mjs, systemctl-status.mjs and
 * systemctl-list.mjs; the unit state they read and write is units.mjs. systemctl.mjs is the command: it
 * prints what runSystemctl returns and exits with its code.
 */
import { readFileSync } from "node:fs";
import { isAlive, readFaults, recordCall, withLock } from "./sandbox.mjs";
import { disableUnits, enableUnits } from "./systemctl-enable.mjs";
import { SEE, startUnit, stopUnit, verbFails } from "./systemctl-jobs.mjs";
import { knownUnits, listUnitFilesCmd, listUnits } from "./systemctl-list.mjs";
import { parseSystemctlArgs } from "./systemctl-options.mjs";
import { show } from "./systemctl-show.mjs";
import { status } from "./systemctl-status.mjs";
import {
  normalizeUnitName,
  observedUnitState,
  readUnitState,
  reloadAll,
  resolveUnit,
  signalNumber,
  unitFilePath,
  unitFileState,
  writeUnitState,
} from "./units.mjs";

/**
 * What every verb gets: the sandbox root, the parsed options (systemctl-options.mjs), the fault
 * switches, and where output goes (buffered until the command ends).
 * @typedef {{root: string, opts: ReturnType<typeof parseSystemctlArgs>["opts"], faults: Record<string, any>,
 *   out: (text: string) => void, err: (text: string) => void}} SystemctlContext
 */

/**
 * `systemctl <argv>` in the sandbox `root`: records the call, runs the verb, and returns what systemctl
 * prints on stdout and on stderr and its exit code (an error a verb throws: `systemctl: <message>`,
 * exit 1). systemctl.mjs writes them and exits; SimGpuHost runs the read-only verbs in its own process.
 * `--version` prints and exits the process at once, as systemctl does.
 * @param {string[]} argv
 * @param {string} root
 * @returns {Promise<{ code: number, stdout: string, stderr: string }>}
 */
export async function runSystemctl(argv, root) {
  recordCall("systemctl", argv, root);

  let stdout = "";
  let stderr = "";
  const out = (text) => {
    stdout += text;
  };
  const err = (text) => {
    stderr += text;
  };

  const { opts, positional, badOption } = parseSystemctlArgs(argv);
  const faults = readFaults(root);

  /** @type {SystemctlContext} */
  const ctx = { root, opts, faults, out, err };
  let code;
  try {
    code = await main(ctx, positional, badOption);
  } catch (error) {
    err(`systemctl: ${error?.message ?? error}\n`);
    code = 1;
  }
  return { code, stdout, stderr };
}

// ---------------------------------------------------------------- dispatch

async function main(ctx, positional, badOption) {
  const { root, opts, faults, out, err } = ctx;
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
      if (faults.daemonReloadFails === true || verbFails(ctx, "daemon-reload", "")) {
        err("Failed to reload daemon: Connection timed out\n");
        return 1;
      }
      reloadAll(root);
      return 0;
    }
    case "start": {
      if (!needUnits()) return 1;
      let code = 0;
      for (const name of names) code = Math.max(code, await startUnit(ctx, name));
      return code;
    }
    case "stop": {
      if (!needUnits()) return 1;
      let code = 0;
      for (const name of names) code = Math.max(code, await stopUnit(ctx, name));
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
        if (verbFails(ctx, "restart", name)) {
          err(`Job for ${name} failed because the control process exited with error code.\n${SEE(name)}`);
          code = Math.max(code, 1);
          continue;
        }
        const wasActive = observedUnitState(root, name).activeState === "active";
        if (verb === "try-restart" && !wasActive) continue;
        await stopUnit(ctx, name, verb);
        code = Math.max(code, await startUnit(ctx, name, verb));
      }
      return code;
    }
    case "enable": {
      if (!needUnits()) return 1;
      const { code, toStart } = enableUnits(ctx, names);
      if (code !== 0 || !opts.now) return code;
      let startCode = 0;
      for (const name of toStart) startCode = Math.max(startCode, await startUnit(ctx, name));
      return startCode;
    }
    case "disable": {
      if (!needUnits()) return 1;
      const { code, done } = disableUnits(ctx, names);
      if (code !== 0 || !opts.now) return code;
      let stopCode = 0;
      for (const name of done) stopCode = Math.max(stopCode, await stopUnit(ctx, name));
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
      const targets = names.length > 0 ? names : knownUnits(ctx);
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
      return show(ctx, targets);
    }
    case "status":
      return status(ctx, names.length > 0 ? names : knownUnits(ctx));
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
      return listUnits(ctx, args);
    case "list-unit-files":
      return listUnitFilesCmd(ctx, args);
    default:
      err(`Unknown command verb '${verb}'.\n`);
      return 1;
  }
}
