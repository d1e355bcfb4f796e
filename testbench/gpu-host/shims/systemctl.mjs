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
 * The command: systemctl-main.mjs (runSystemctl) reads the command line and runs the verb; this prints
 * what it printed, stdout then stderr, and exits with its code.
 */
import { sandboxRoot } from "./sandbox.mjs";
import { runSystemctl } from "./systemctl-main.mjs";

const { code, stdout, stderr } = await runSystemctl(process.argv.slice(2), sandboxRoot());
process.stdout.write(stdout, () => {
  process.stderr.write(stderr, () => process.exit(code));
});
