import { execFileSync } from "node:child_process";

/** The suite needs real redis-server, sshd and haproxy: fail loudly, never skip, when they are missing. */
export default function setup(): void {
  const missing: string[] = [];
  const packages: string[] = [];
  for (const [binary, pkg] of [
    ["redis-server", "redis-server"],
    ["/usr/sbin/sshd", "openssh-server"],
    ["ssh-keygen", "openssh-client"],
    ["/usr/sbin/haproxy", "haproxy"],
    ["socat", "socat"],
  ] as const) {
    try {
      execFileSync("bash", ["-c", `command -v ${binary}`], { stdio: "ignore" });
    } catch {
      missing.push(`${binary} (Debian package ${pkg})`);
      packages.push(pkg);
    }
  }
  if (missing.length > 0) {
    throw new Error(
      `The test suite needs real services that are not installed: ${missing.join(", ")}. ` +
        `Run \`npm test\` (its bootstrap installs them as root) or: sudo apt-get install -y ${packages.join(" ")}`,
    );
  }
}
