import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/**
 * The suite needs real redis-server, sshd and haproxy: fail loudly, never skip, when they are missing.
 * Then it builds the current sources once, as `npm run build` does (tsc without its type check, which
 * `npm test` ran already), for the `modelswap` children the tests start (testbench/modelswap-bin.ts);
 * the build is removed when the suite ends.
 */
export default function setup(): () => void {
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
  const build = buildForSuite();
  process.env.MODELSWAP_SUITE_BUILD = build;
  return () => rmSync(build, { recursive: true, force: true });
}

/** dist/ and bin/ of a build of this checkout's sources, in a directory of this run's own (under node_modules, to find the dependencies). */
function buildForSuite(): string {
  const build = `${ROOT}node_modules/.cache/modelswap-suite-${process.pid}`;
  rmSync(build, { recursive: true, force: true });
  const tsc = `${ROOT}node_modules/.bin/tsc`;
  execFileSync(tsc, ["-p", "tsconfig.build.json", "--noCheck", "--outDir", `${build}/dist`], {
    cwd: ROOT,
    stdio: "inherit",
  });
  execFileSync(process.execPath, ["scripts/copy-assets.mjs", `${build}/dist`], {
    cwd: ROOT,
    stdio: "ignore",
  });
  mkdirSync(`${build}/bin`);
  copyFileSync(`${ROOT}bin/modelswap.js`, `${build}/bin/modelswap.js`);
  return build;
}
