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
): Promise<void> {
  const assignments = Object.entries({ MODELSWAP_SANDBOX: resolve(sandboxRoot), ...extraEnv })
    .map(([key, value]) => {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) throw new Error(`invalid environment variable name: ${key}`);
      return `${key}=${shQuote(value)}`;
    })
    .join(" ");
  const script = `#!/bin/sh\n${assignments} exec ${shQuote(process.execPath)} ${shQuote(resolve(scriptPath))} "$@"\n`;
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, script);
  await chmod(path, 0o755);
}
