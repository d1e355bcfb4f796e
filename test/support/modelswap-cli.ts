import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { modelswapBin } from "../../testbench/modelswap-bin.ts";

const run = promisify(execFile);

export interface CliResult {
  /** null: killed at the time limit (stderr then says so). */
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real `modelswap` command (the suite's build of the sources: testbench/modelswap-bin.ts) with PATH and HOME of this process and
 * `env`, nothing else of its environment; resolves with its exit code and output, whatever the code.
 */
export async function runModelswap(
  args: readonly string[],
  env: Record<string, string>,
  timeoutMs: number,
): Promise<CliResult> {
  try {
    const bin = modelswapBin();
    const { stdout, stderr } = await run(process.execPath, [bin.path, ...args], {
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "/tmp",
        ...bin.env,
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
