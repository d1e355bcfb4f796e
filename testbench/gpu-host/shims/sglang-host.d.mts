/** Types for sglang-host.mjs (the simulated GPU host as the simulated SGLang sees it). */

export interface HostGpuSet {
  setName: string;
  count: number;
  name: string;
  cc: number;
  memMiB: number;
}

export interface GpuUsage {
  /** Physical GPU indices (nvidia-smi's). */
  gpus: number[];
  memMiB: number;
  util: number;
  processName: string;
}

export interface SglangFaults {
  modes: Set<string>;
  loadSeconds: number;
  msPerToken: number;
  ttftMs: number;
  warmupMs: number;
  sigtermPollMs: number;
  dieAfter: number | null;
}

export declare function sandboxRoot(): string | null;
export declare function readConfig(): Record<string, unknown>;
export declare function readFaults(): Record<string, unknown>;
export declare function recordCall(cmd: string, argv: string[]): void;
export declare function venvDir(): string | null;
export declare function venvPython(): string;
export declare function sitePackagesDir(): string | null;
export declare function installedSglang(): {
  projectDir: string;
  packageDir: string;
  version: string | null;
} | null;
export declare function engineDir(): string | null;
export declare function engineVersion(): string | null;
export declare function gpuSet(): HostGpuSet;
export declare function parseSetName(setName: string): HostGpuSet;
/** UUIDs of the host's GPUs by physical index ([] when the set is unknown to gpu-sets.mjs). */
export declare function gpuUuids(): string[];
/**
 * The physical GPUs a CUDA process sees, by logical index, for a CUDA_VISIBLE_DEVICES value
 * (undefined/null: not set) on a host of `count` GPUs with these UUIDs.
 */
export declare function parseVisibleDevices(
  spec: string | undefined | null,
  count: number,
  uuids?: string[],
): number[];
/** The physical GPUs this process sees (its CUDA_VISIBLE_DEVICES), by logical index. */
export declare function visibleGpus(env?: NodeJS.ProcessEnv): number[];
/** MiB used by other live processes, by physical GPU index. */
export declare function memoryUsedByOthers(): Map<number, number>;
export declare function registerGpuUsage(usage: GpuUsage): void;
export declare function clearGpuUsage(): void;
export declare function sglangFaults(port: number | null, modelPath?: string | null): SglangFaults;
