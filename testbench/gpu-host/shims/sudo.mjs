/**
 * Imitates: `sudo` (sudo 1.9.15 with the sudoers policy, as on Ubuntu 24.04) on the simulated host, for
 * what modelswap runs: `sudo -n <command>` and `sudo -n -l [command]`. Everything runs as the calling
 * user (the sandbox has no root); what the rules allow is decided like sudoers does.
 *
 * Rules: fault `sudoRules`, a list of sudoers commands for the login user, all NOPASSWD, each
 * `<absolute path> [arguments]`: no arguments allows any; `""` allows none; `^…$` is a regular
 * expression over the arguments joined by spaces (sudoers(5), sudo >= 1.9.10); anything else must equal
 * them. Unset: the rules docs/operations.md gives, for this sandbox's paths (tee as found on PATH, the
 * sandbox's systemctl, its unitDir). `[]`: the user has no rules.
 *
 * Behaviour (sudo(8): "-l … If a command is specified and is permitted by the security policy, the
 * fully-qualified path to the command is displayed along with any command line arguments. If a command
 * is specified but not allowed by the policy, sudo will exit with a status value of 1"; "-n … If a
 * password is required for the command to run, sudo will display an error message and exit"):
 * - `sudo -n -l`: the listing in sudo's format ("Matching Defaults entries for <user> on <host>:" …
 *   "User <user> may run the following commands on <host>:" / "    (root) NOPASSWD: <rules>"); with no
 *   rules, listing needs a password (sudoers' listpw=any: some NOPASSWD entry is needed) →
 *   `sudo: a password is required`, exit 1.
 * - `sudo -n -l <command…>`: allowed → the resolved path and arguments, exit 0; not allowed → exit 1,
 *   nothing printed; not found on PATH → `sudo: <command>: command not found`, exit 1.
 * - `sudo -n <command…>`: allowed → runs it (stdin, stdout, stderr passed through), its exit status;
 *   not allowed → `sudo: a password is required`, exit 1 (sudoers asks for a password before it says no).
 * - without `-n`, a command that is not allowed: `sudo: a terminal is required to read the password;
 *   either use the -S option to read from standard input or configure an askpass helper`, exit 1.
 * Not simulated: other options, Defaults, Runas lists, aliases, wildcards in arguments, -ll.
 */
import { spawnSync } from "node:child_process";
import { userInfo } from "node:os";
import { join } from "node:path";
import { fault, findOnPath, readConfig, recordCall, sandboxPaths } from "./sandbox.mjs";

const argv = process.argv.slice(2);
recordCall("sudo", argv);

function resolveCommand(name) {
  return name.includes("/") ? name : findOnPath(name, process.env.PATH);
}

function escapeRegex(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function rules() {
  const given = fault("sudoRules");
  if (Array.isArray(given)) return given.map(String);
  const paths = sandboxPaths();
  const systemctl = join(paths.binDir, "systemctl");
  return [
    `${resolveCommand("tee") ?? "/usr/bin/tee"} ^${escapeRegex(paths.unitDir)}/(sglang|vllm)-[a-z0-9-]+[.]service$`,
    `${systemctl} daemon-reload`,
    `${systemctl} ^(enable|disable) --now (sglang|vllm)-[a-z0-9-]+[.]service$`,
    // a failed new unit stopped at once (docs/operations.md, MODELSWAP_FAST_STOP)
    `${systemctl} ^kill --signal=SIGKILL (sglang|vllm)-[a-z0-9-]+[.]service$`,
    // disk retention's removal of old unit files (docs/operations.md, "Disk retention")
    `${resolveCommand("rm") ?? "/usr/bin/rm"} ^-f -- ${escapeRegex(paths.unitDir)}/(sglang|vllm)-[a-z0-9-]+[.]service$`,
  ];
}

function allowed(path, args) {
  const joined = args.join(" ");
  return rules().some((rule) => {
    const space = rule.indexOf(" ");
    const command = space < 0 ? rule : rule.slice(0, space);
    if (command !== path) return false;
    if (space < 0) return true;
    const spec = rule.slice(space + 1);
    if (spec === '""') return args.length === 0;
    if (spec.startsWith("^") && spec.endsWith("$")) return new RegExp(spec).test(joined);
    return spec === joined;
  });
}

function fail(message) {
  if (message !== undefined) process.stderr.write(`${message}\n`);
  process.exit(1);
}

let nonInteractive = false;
let list = false;
let i = 0;
for (; i < argv.length; i++) {
  const arg = argv[i];
  if (arg === "--") {
    i++;
    break;
  }
  if (!arg.startsWith("-")) break;
  if (arg === "-n" || arg === "--non-interactive") nonInteractive = true;
  else if (arg === "-l" || arg === "--list") list = true;
  else if (/^-[nl]+$/.test(arg)) {
    if (arg.includes("n")) nonInteractive = true;
    if (arg.includes("l")) list = true;
  } else fail(`sudo: invalid option -- '${arg.replace(/^-+/, "")}'`);
}
const [name, ...args] = argv.slice(i);
const user = userInfo().username;
const host = readConfig().name ?? "localhost";
const passwordNeeded = nonInteractive
  ? "sudo: a password is required"
  : "sudo: a terminal is required to read the password; either use the -S option to read from standard input or configure an askpass helper";

if (name === undefined) {
  if (!list) fail("usage: sudo -h | -K | -k | -V");
  const all = rules();
  if (all.length === 0) fail(passwordNeeded);
  process.stdout.write(
    `Matching Defaults entries for ${user} on ${host}:\n` +
      "    env_reset, mail_badpass, secure_path=/usr/local/sbin\\:/usr/local/bin\\:/usr/sbin\\:/usr/bin\\:/sbin\\:/bin\\:/snap/bin, use_pty\n\n" +
      `User ${user} may run the following commands on ${host}:\n` +
      `    (root) NOPASSWD: ${all.join(", ")}\n`,
  );
  process.exit(0);
}
const path = resolveCommand(name);
if (path === undefined) fail(`sudo: ${name}: command not found`);
if (list) {
  if (!allowed(path, args)) fail();
  process.stdout.write(`${[path, ...args].join(" ")}\n`);
  process.exit(0);
}
if (!allowed(path, args)) fail(passwordNeeded);
const result = spawnSync(path, args, { stdio: "inherit" });
process.exit(result.status ?? 1);
