import { chmod, mkdir, writeFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** Directory holding the shim scripts (`<name>.mjs`). */
export const SHIMS_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "shims");

/** Absolute path of the shim script `shims/<name>.mjs`. */
export function shimScriptPath(name: string): string {
  return resolve(SHIMS_DIR, `${name}.mjs`);
}

/** Quotes a string for POSIX sh with single quotes. */
export function shQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * Writes an executable `#!/bin/sh` wrapper at `path` that runs the shim `scriptPath` with this
 * Node binary, passing every argument through and setting MODELSWAP_SANDBOX (plus `extraEnv`):
 *
 *   #!/bin/sh
 *   MODELSWAP_SANDBOX='<root>' exec '<node>' '<script>' "$@"
 */
export async function writeShimWrapper(
  path: string,
  scriptPath: string,
  sandboxRoot: string,
  extraEnv: Record<string, string> = {},
  /** bash lines run after the hold and before Node: a call they answer exits there (systemctl-fast-path.ts). */
  fastPath = "",
): Promise<void> {
  const assignments = Object.entries({ MODELSWAP_SANDBOX: resolve(sandboxRoot), ...extraEnv })
    .map(([key, value]) => {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) throw new Error(`invalid environment variable name: ${key}`);
      return `${key}=${shQuote(value)}`;
    })
    .join(" ");
  const script = `#!${fastPath === "" ? "/bin/sh" : "/bin/bash"}\n${holdPrologue(sandboxRoot)}${fastPath}${assignments} exec ${shQuote(process.execPath)} ${shQuote(resolve(scriptPath))} "$@"\n`;
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, script);
  await chmod(path, 0o755);
}

/**
 * A wrapper that runs a real binary (e.g. /usr/bin/curl) with the hold prologue in front, so tests can
 * hold real commands too.
 */
export async function writePassthroughWrapper(
  path: string,
  binary: string,
  sandboxRoot: string,
): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, `#!/bin/sh\n${holdPrologue(sandboxRoot)}exec ${shQuote(binary)} "$@"\n`);
  await chmod(path, 0o755);
}

/**
 * The hold: while `state/holds/<command name>` exists and the call's arguments contain its text, the call
 * waits before it runs, after creating `state/held/<name>` — so a test knows the bot is inside that
 * command and can kill the bot there (SimGpuHost.hold / waitHeld / release). A hold ends with the process
 * that wrote the wrapper (the bench): an interrupted bench leaves no call waiting for good.
 */
function holdPrologue(sandboxRoot: string): string {
  const root = shQuote(resolve(sandboxRoot));
  return [
    `n=\${0##*/}; h=${root}/state/holds/$n`,
    `if [ -e "$h" ]; then p=$(cat "$h"); case " $* " in *"$p"*) : > ${root}/state/held/$n; while [ -e "$h" ] && kill -0 ${process.pid} 2>/dev/null; do sleep 0.05; done;; esac; fi`,
    "",
  ].join("\n");
}
