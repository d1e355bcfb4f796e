/** Types for sandbox.mjs (shared helpers of the simulated GPU host's shims). */

export declare const SANDBOX_ENV: "MODELSWAP_SANDBOX";

export interface SandboxPaths {
  root: string;
  binDir: string;
  unitDir: string;
  modelsDir: string;
  engineSourceDir: string;
  venvDir: string;
  sitePackagesDir: string;
  stateDir: string;
  unitsStateDir: string;
  loadedDir: string;
  journalDir: string;
  gpuUsageDir: string;
  procsDir: string;
  locksDir: string;
  faultsFile: string;
  configFile: string;
  callsFile: string;
  cudaStackFile: string;
}

export interface GpuUsage {
  pid?: number;
  gpus?: number[];
  /** MiB per GPU: one number for every listed GPU, or an array parallel to `gpus`. */
  memMiB?: number | number[];
  util?: number;
  processName?: string;
}

export interface LiveGpuUsage {
  pid: number;
  gpus: number[];
  memMiB: number | number[];
  util: number;
  processName: string;
}

export declare function sandboxRoot(): string;
export declare function sandboxPaths(root?: string): SandboxPaths;
export declare function readJsonFile<T>(path: string, fallback: T): T;
export declare function writeFileAtomic(path: string, data: string | Uint8Array): void;
export declare function writeJsonAtomic(path: string, value: unknown): void;
export declare function appendLine(path: string, line: string): void;
export declare function readFaults(root?: string): Record<string, unknown>;
export declare function fault(name: string, root?: string): unknown;
export declare function readConfig(root?: string): Record<string, unknown>;
export declare function recordCall(cmd: string, argv: string[], root?: string): void;
export declare function processState(pid: number): string | null;
export declare function isAlive(pid: number): boolean;
export declare function processGroupMembers(pgid: number): { pid: number; state: string }[];
export declare function processGroupAlive(pgid: number): boolean;
export declare function sleep(ms: number): Promise<void>;
export declare function registerGpuUsage(usage?: GpuUsage, root?: string): void;
export declare function registerPinnedMemory(bytes: number, pid?: number, root?: string): void;
export declare function clearPinnedMemory(pid?: number, root?: string): void;
export declare function livePinnedBytes(root?: string): number;
export declare function clearGpuUsage(pid?: number, root?: string): void;
export declare function liveGpuUsage(root?: string): LiveGpuUsage[];
export declare function registerProcess(pid?: number, label?: string, root?: string): void;
export declare function appendJournal(
  unit: string,
  pid: number,
  comm: string,
  message: string,
  root?: string,
): void;
export declare function withLock<T>(
  name: string,
  fn: () => Promise<T> | T,
  options?: { root?: string; timeoutMs?: number },
): Promise<T>;
