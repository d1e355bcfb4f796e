/**
 * Imitates: the `vllm` console script of vLLM 0.18 (vllm/entrypoints/cli/main.py): `vllm serve …`,
 * `vllm bench serve …`, `vllm --version`, `vllm --help`. `python -m vllm.entrypoints.cli.main` runs the
 * same. Subcommands vLLM has but the bench does not need (chat, complete, collect-env, run-batch) say so.
 */

import { formatTopHelp, TOP_USAGE } from "./vllm-argparse.mjs";
import { installedVllm, VLLM_VERSION } from "./vllm-host.mjs";
import { vllmServe } from "./vllm-server.mjs";

const SUBCOMMANDS = ["chat", "complete", "serve", "bench", "collect-env", "run-batch"];

/**
 * Runs the CLI. Returns an exit code, or null while a server keeps the process alive.
 * @param {string[]} argv
 */
export async function vllmMain(argv) {
  const first = argv[0];
  if (first === undefined || first === "-h" || first === "--help") {
    process.stdout.write(formatTopHelp());
    return 0;
  }
  if (first === "-v" || first === "--version") {
    process.stdout.write(`${installedVllm()?.version ?? VLLM_VERSION}\n`);
    return 0;
  }
  if (first === "serve") {
    await vllmServe(argv.slice(1), "serve");
    return null;
  }
  if (first === "bench") {
    const type = argv[1];
    if (type === "serve") {
      const { vllmBenchServe } = await import("./vllm-bench.mjs");
      return await vllmBenchServe(argv.slice(2));
    }
    const types = ["latency", "serve", "throughput"];
    process.stderr.write(
      type === undefined || type.startsWith("-")
        ? `usage: vllm bench <bench_type> [options]\nvllm bench: error: the following arguments are required: bench_type\n`
        : `usage: vllm bench <bench_type> [options]\nvllm bench: error: argument bench_type: invalid choice: '${type}' (choose from ${types.map((t) => `'${t}'`).join(", ")})\n`,
    );
    return 2;
  }
  if (SUBCOMMANDS.includes(first)) {
    process.stderr.write(`vllm ${first}: not simulated by the modelswap test bench\n`);
    return 1;
  }
  process.stderr.write(
    `${TOP_USAGE}vllm: error: argument subparser: invalid choice: '${first}' (choose from ${SUBCOMMANDS.map((s) => `'${s}'`).join(", ")})\n`,
  );
  return 2;
}
