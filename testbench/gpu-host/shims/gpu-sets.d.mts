/** Types for gpu-sets.mjs (the simulated GPU sets). */

export interface SimGpu {
  index: number;
  name: string;
  uuid: string;
  busId: string;
  serial: string;
  memoryTotalMiB: number;
  reservedMiB: number;
  computeCap: string;
  powerLimitW: number;
  idlePowerW: number;
  busyPowerW: number;
  idleTempC: number;
  busyTempC: number;
  memoryTempC: number;
  fan: string;
  ecc: string;
  mig: string;
  vbios: string;
  arch: string;
  idlePstate: string;
  processOverheadMiB: number;
  clocks: { sm: number; mem: number; maxSm: number; maxMem: number };
}

export declare const GPU_SETS: Record<string, SimGpu[]>;
export declare const GPU_SET_NAMES: string[];
export declare const DRIVER_VERSION: string;
export declare const CUDA_VERSION: string;
export declare function deterministicUuid(seed: string): string;
export declare function gpuSet(name: string): SimGpu[];
