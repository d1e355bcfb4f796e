/**
 * systemctl's start and stop jobs: `start` spawns a detached unit supervisor (unit-supervisor.mjs)
 * that runs ExecStart as a real process and waits for the job's result; `stop` signals the
 * supervisor (or cleans up an orphaned main process group). Also the fault switch systemctlFails.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { isAlive, processGroupAlive, sleep, withLock } from "./sandbox.mjs";
import { readUnitState, resolveUnit, writeUnitState } from "./units.mjs";

/** @typedef {import("./systemctl-main.mjs").SystemctlContext} SystemctlContext */

const here = dirname(fileURLToPath(import.meta.url));

/** systemctlFails: ["start", "stop:foo.service", ...] — does this verb (for this unit) fail? */
export function verbFails(ctx, verb, unit) {
  const { faults } = ctx;
  const list = Array.isArray(faults.systemctlFails) ? faults.systemctlFails : [];
  return list.some((entry) => entry === verb || entry === `${verb}:${unit}`);
}

export const SEE = (name) => `See "systemctl status ${name}" and "journalctl -xeu ${name}" for details.\n`;

export function reloadWarning(ctx, name) {
  const { err } = ctx;
  err(
    `Warning: The unit file, source configuration file or drop-ins of ${name} changed on disk. Run 'systemctl daemon-reload' to reload units.\n`,
  );
}

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

export async function startUnit(ctx, name, verb = "start") {
  const { root, err } = ctx;
  const { unit, needDaemonReload } = resolveUnit(root, name);
  if (unit === null) {
    err(`Failed to ${verb} ${name}: Unit ${name} not found.\n`);
    return 5;
  }
  if (needDaemonReload) reloadWarning(ctx, name);
  if (unit.execStart === null) {
    err(`Failed to ${verb} ${name}: Unit ${name} has a bad unit file setting.\n`);
    err(`See system logs and 'systemctl status ${name}' for details.\n`);
    return 1;
  }
  if (verbFails(ctx, verb, name) || (verb !== "start" && verbFails(ctx, "start", name))) {
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

export async function stopUnit(ctx, name, verb = "stop") {
  const { root, faults, err } = ctx;
  const { unit, needDaemonReload } = resolveUnit(root, name, { recordFirstLoad: false });
  const existing = readUnitState(root, name);
  if (unit === null && existing === null) {
    err(`Failed to ${verb} ${name}: Unit ${name} not loaded.\n`);
    return 5;
  }
  if (needDaemonReload) reloadWarning(ctx, name);
  if (verbFails(ctx, "stop", name)) {
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
