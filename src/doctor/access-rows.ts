import type { HostConfig } from "../config/file-schema.ts";
import { hostEngines } from "../config/host-engines.ts";
import { privilegedCommands } from "../engine/unit-commands.ts";
import { asCodedError } from "../errors.ts";
import { lines, sh } from "../host/shell-quote.ts";
import type { HostTransport } from "../host/transport.ts";
import { type DoctorRow, pass, problem } from "./doctor-row.ts";
import { type Check, lastLine } from "./host-check.ts";

/*
 * The doctor's rows of a host's access: the SSH handshake and login (the host key against its pin) and sudo
 * against the privileged commands the switch and the rollback run.
 */

export async function connectRow(
  transport: HostTransport,
  host: HostConfig,
  target: string,
): Promise<{ status: "pass"; row: DoctorRow; user: string } | (DoctorRow & { status: "fail" })> {
  const ssh = host.ssh;
  try {
    const result = await transport.exec(sh`id -un`);
    const user = result.stdout.trim();
    const saw =
      ssh === undefined
        ? `local: commands run on this machine as ${user}`
        : `${ssh.user}@${ssh.address}:${ssh.port}: host key ${ssh.hostKeySha256} matches the pin; logged in as ${user}`;
    return { status: "pass", row: pass(target, "ssh", saw), user };
  } catch (error) {
    const coded = asCodedError(error);
    const fix =
      coded.code === "HOST_KEY_MISMATCH" && ssh !== undefined
        ? `see what the host offers with \`ssh-keyscan -t ed25519 -p ${ssh.port} ${ssh.address} | ssh-keygen -lf -\` and compare it on the host itself (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub); if the host was reinstalled and you trust it, set hosts[${host.name}].ssh.hostKeySha256 to it, otherwise treat it as an incident`
        : coded.fix;
    return { ...problem("fail", target, "ssh", coded.message, coded.code, fix), status: "fail" };
  }
}

export function sudoRow(transport: HostTransport, host: HostConfig, target: string, user: string): Check {
  return {
    check: "sudo",
    run: async () => {
      if (!host.sudo) {
        if (user === "root") return pass(target, "sudo", "sudo: false, and the bot logs in as root");
        return problem(
          "fail",
          target,
          "sudo",
          `sudo: false, but ${user} is not root: writing units and systemctl enable/disable would be refused`,
          "HOST_SUDO_DENIED",
          `set sudo: true for ${host.name} and install the sudoers rules of docs/operations.md ("sudo: exactly the rights it needs")`,
        );
      }
      const listing = await transport.exec(sh`sudo -n -l`);
      if (listing.code !== 0) {
        const said = lastLine(listing.stderr || listing.stdout) || `exit ${listing.code}`;
        return problem(
          "fail",
          target,
          "sudo",
          `sudo -n -l: ${said}`,
          "HOST_SUDO_DENIED",
          `install the sudoers rules of docs/operations.md ("sudo: exactly the rights it needs") as /etc/sudoers.d/modelswap for ${user}, with NOPASSWD`,
        );
      }
      // `sudo -l <command>`: sudo itself decides whether the rules allow that exact command line (exit 0)
      // or not (exit 1), as sudo(8) documents for -l with a command; nothing runs
      const commands = privilegedCommands({ ...host, engines: hostEngines(host).map((e) => e.kind) });
      const asked = await transport.exec(
        lines([
          ...commands.map(
            ({ command }, i) =>
              sh`{ sudo -n -l ${command} > /dev/null 2>&1 && echo ${i}:yes || echo ${i}:no; } &`,
          ),
          sh`wait`,
        ]),
      );
      const refused = commands.filter((_, i) => !asked.stdout.includes(`${i}:yes`));
      const fix = `add the rules of docs/operations.md ("sudo: exactly the rights it needs") for unitDir ${host.unitDir} and currentUnit ${host.currentUnit} to /etc/sudoers.d/modelswap`;
      if (refused.length === 0)
        return pass(
          target,
          "sudo",
          `sudo -n allows all ${commands.length} commands the switch and rollback run`,
        );
      const needed = refused.filter((c) => c.without === undefined);
      if (needed.length > 0)
        return problem(
          "fail",
          target,
          "sudo",
          `sudo -n does not allow ${needed.map((c) => c.what).join("; ")}`,
          "HOST_SUDO_DENIED",
          fix,
        );
      // only what the bot can do without: it works, more slowly
      return problem(
        "warn",
        target,
        "sudo",
        `sudo -n does not allow ${refused.map((c) => `${c.what} (without it ${c.without})`).join("; ")}`,
        "HOST_SUDO_PARTIAL",
        fix,
      );
    },
  };
}
