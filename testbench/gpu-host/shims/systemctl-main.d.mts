/** Types for systemctl-main.mjs (the simulated systemctl, as a function). */

/** Runs `systemctl <argv>` in the sandbox `root`: what it prints and its exit code. */
export declare function runSystemctl(
  argv: string[],
  root: string,
): Promise<{ code: number; stdout: string; stderr: string }>;
