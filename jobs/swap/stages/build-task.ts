import type { EngineKind } from "../../../src/engine/engine.ts";
import type { EngineBuildInput } from "../../../src/engine/engine-setup.ts";
import { engineFor } from "../../../src/engine/engines.ts";
import type { ShellCommand } from "../../../src/host/shell-quote.ts";

export interface BuildInput extends Omit<EngineBuildInput, "compileKernels"> {
  /** The engine to build. */
  kind: EngineKind;
  /** vLLM: compile its kernels (default: the commit's precompiled ones). */
  compileKernels?: boolean;
}

/**
 * The detached engine build of one commit in a directory of its own, as the engine builds (SGLang: a
 * source checkout on the venv's packages; vLLM: a checkout installed with the commit's precompiled
 * kernels beside the venv): the engine source the serving unit runs, and the venv's installed
 * packages, are never touched. Each engine's script is in its setup module (src/engine/<engine>/*-setup.ts).
 */
export function buildScript(input: BuildInput): ShellCommand {
  return engineFor(input.kind).buildScript({ ...input, compileKernels: input.compileKernels ?? false });
}
