import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);
const BIN = new URL("../../bin/modelswap.js", import.meta.url).pathname;

export interface CliResult {
  /** null: killed at the time limit (stderr then says so). */
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real `modelswap` command (from its TypeScript sources) with PATH and HOME of this process and
 * `env`, nothing else of its environment; resolves with its exit code and output, whatever the code.
 */
export async function runModelswap(
  args: readonly string[],
  env: Record<string, string>,
  timeoutMs: number,
): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], {
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "/tmp",
        MODELSWAP_FROM_SOURCE: "1",
        ...env,
      },
      timeout: timeoutMs,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number | null; signal: string | null; stdout: string; stderr: string };
    // killed at the time limit: code is null; say so where a failing assertion shows it
    const killed = !e.signal
      ? ""
      : `\n[modelswap ${args.join(" ")}: killed by ${e.signal} after ${timeoutMs} ms]`;
    return { code: e.code, stdout: e.stdout, stderr: `${e.stderr}${killed}` };
  }
}
