import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);

/**
 * What a simulated host command printed on stdout and its exit code, run in the sandbox `root` (the
 * fast-path tests ask the Node shim and the shell wrapper the same question with it), with `env` added to
 * the environment.
 */
export async function shimAnswer(
  root: string,
  command: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ out: string; code: number }> {
  try {
    const { stdout } = await run(command, args, { env: { ...process.env, ...env, MODELSWAP_SANDBOX: root } });
    return { out: stdout, code: 0 };
  } catch (error) {
    const e = error as { stdout?: string; code?: number };
    return { out: e.stdout ?? "", code: e.code ?? -1 };
  }
}
