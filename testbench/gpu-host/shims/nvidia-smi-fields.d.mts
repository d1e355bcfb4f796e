/** Types for nvidia-smi-fields.mjs (what the simulated nvidia-smi reports of a GPU). */
import type { SimGpu } from "./gpu-sets.mjs";

/** One live process's entry of state/gpu-usage (sandbox.mjs liveGpuUsage). */
export interface GpuUsageEntry {
  pid: number;
  gpus: number[];
  memMiB: number | number[];
  util: number;
  processName: string;
}

/** A GPU under its load, as nvidia-smi shows it. */
export interface GpuStatus {
  procs: { pid: number; name: string; memMiB: number }[];
  util: number;
  memUtil: number;
  used: number;
  free: number;
  powerW: number;
  tempC: number;
  pstate: string;
}

/** The value nvidia-smi prints as `[N/A]`. */
export declare const NA: { na: true };

/** A `--query-gpu` field: header (with unit), unit suffix of values, value. */
export interface QueryGpuField {
  header: string;
  unit: string;
  get(gpu: SimGpu, status: GpuStatus, all: SimGpu[]): string | typeof NA;
}

export declare const FIELDS: Record<string, QueryGpuField>;
export declare const APP_FIELDS: Record<string, { header: string; unit: string; get(row: unknown): string }>;
export declare function gpuStatus(gpu: SimGpu, usage: GpuUsageEntry[]): GpuStatus;
export declare function pad2(n: number): string;
export declare function csvTimestamp(d: Date): string;
