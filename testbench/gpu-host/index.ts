export type { GpuUsage, LiveGpuUsage, SandboxPaths } from "./shims/sandbox.mjs";
export {
  type CommandResult,
  createSimGpuHost,
  GPU_SET_NAMES,
  type GpuSetName,
  type ShimCall,
  SimGpuHost,
  type SimGpuHostOptions,
  type SimHostConfig,
  type UnitState,
} from "./sim-gpu-host.ts";
export { SHIMS_DIR, shimScriptPath, shQuote, writeShimWrapper } from "./write-shim-wrapper.ts";
