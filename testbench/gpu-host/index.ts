export {
  DEFAULT_ENGINE_REFS,
  ENGINE_MAIN,
  ENGINE_PREINSTALLED,
  ENGINE_V0_5_2,
  type EngineRefSpec,
  engineTreeFiles,
  writeEngineTree,
} from "./engine-tree.ts";
export {
  createEngineUpstream,
  type EnginePatchOptions,
  type EngineUpstream,
  makeEnginePatch,
} from "./engine-upstream.ts";
export type { GpuUsage, LiveGpuUsage, SandboxPaths } from "./shims/sandbox.mjs";
export type { PackageChange, StackState } from "./shims/venv.mjs";
export {
  type CommandResult,
  createSimGpuHost,
  GPU_SET_NAMES,
  type GpuSetName,
  type InstalledEngine,
  type ShimCall,
  SimGpuHost,
  type SimGpuHostOptions,
  type SimHostConfig,
  type UnitState,
} from "./sim-gpu-host.ts";
export { installVllm, uninstallVllm, VLLM_DEFAULT_VERSION } from "./vllm-install.ts";
export { createVllmUpstream, DEFAULT_VLLM_REFS, writeVllmTree } from "./vllm-upstream.ts";
export { SHIMS_DIR, shimScriptPath, shQuote, writeShimWrapper } from "./write-shim-wrapper.ts";
