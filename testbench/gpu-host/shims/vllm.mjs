/**
 * Imitates: `<venv>/bin/vllm`, the console script pip writes for vLLM (`from vllm.entrypoints.cli.main
 * import main`). The wrapper runs `node shims/vllm.mjs "$@"`; the CLI itself is vllm-cli.mjs. When the
 * venv no longer holds vLLM (the script outlived its package), the import fails like CPython's.
 */
import { join } from "node:path";
import { recordCall, venvDir } from "./sglang-host.mjs";
import { vllmMain } from "./vllm-cli.mjs";
import { installedVllm } from "./vllm-host.mjs";

const argv = process.argv.slice(2);
recordCall("vllm", argv);
const script = join(venvDir() ?? "/usr/local", "bin", "vllm");
process.env.MODELSWAP_VLLM_ARGV0 = script;
if (installedVllm() === null) {
  process.stderr.write(
    `Traceback (most recent call last):\n  File "${script}", line 5, in <module>\n    from vllm.entrypoints.cli.main import main\nModuleNotFoundError: No module named 'vllm'\n`,
  );
  process.exit(1);
}
const code = await vllmMain(argv);
if (code !== null) process.exitCode = code;
