import { BUILTIN_FLAGS, formatHelp } from "../../testbench/gpu-host/shims/sglang-flags.mjs";
import {
  formatServeHelp,
  SERVE_DESCRIPTION,
  subcmdEpilog,
} from "../../testbench/gpu-host/shims/vllm-argparse.mjs";

/**
 * The `--help` of each simulated engine as its build prints it (`python -m sglang.launch_server --help`,
 * `vllm serve --help=all`): the flag tables of the real engines' server args (testbench/gpu-host/).
 */
export const ENGINE_HELP = {
  sglang: formatHelp("launch_server.py", BUILTIN_FLAGS),
  vllm: formatServeHelp("vllm serve [model_tag] [options]", SERVE_DESCRIPTION, subcmdEpilog("serve"), "all"),
} as const;
