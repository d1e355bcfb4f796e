import { roughly } from "../format-duration.ts";
import { formatGB } from "./byte-units.ts";
import type { ComputeCapability } from "./compatibility.ts";
import type { Quantization } from "./types.ts";

/**
 * Downtime, from the old unit's stop to the new one's health (DESIGN.md §9): the weights read from disk
 * and sharded onto the GPUs, plus the engine's start-up.
 *
 * Weights: 1.5 GB/s, a cold read as SGLang loads safetensors shards (sglang#1479: DeepSeek-V2.5's 8.6 GB
 * shards at 6–9 s each until they were in the page cache; a Gen4 NVMe's line rate is 7 GB/s, page-cached
 * files load at ≈ 10 GB/s, sglang#3416), so 223 GB take ≈ 2.5 min. Start-up: 90 s to stop the old unit,
 * start the process, initialise CUDA and capture CUDA graphs (12–60 s); NVFP4 on sm_120 JIT-compiles and
 * warms up its kernels for minutes (210 s seen against 18 s of weight I/O), so 240 s there.
 * The health wait allows three times the estimate, at least 10 minutes, in whole minutes: a slow disk
 * must not roll back a good model, a hung load must not wait forever.
 */
export const LOAD_BYTES_PER_SECOND = 1.5e9;

/** Weights already in the page cache (the preload): ≈ 10 GB/s, sglang#3416. */
export const PAGE_CACHED_BYTES_PER_SECOND = 10e9;

export const STARTUP_SECONDS = 90;

export const SM120_NVFP4_STARTUP_SECONDS = 240;

export function expectedDowntimeSeconds(
  weightBytes: number,
  startupSeconds = STARTUP_SECONDS,
  bytesPerSecond = LOAD_BYTES_PER_SECOND,
): number {
  return Math.round(startupSeconds + weightBytes / bytesPerSecond);
}

export function healthTimeoutSeconds(weightBytes: number, startupSeconds = STARTUP_SECONDS): number {
  return Math.max(600, Math.ceil((3 * expectedDowntimeSeconds(weightBytes, startupSeconds)) / 60) * 60);
}

/** The start-up part of the downtime on these GPUs, and what it is made of. */
export function startupOf(
  quantization: Quantization,
  cc: ComputeCapability,
): { seconds: number; what: string } {
  if (quantization === "nvfp4" && cc.major === 12) {
    return {
      seconds: SM120_NVFP4_STARTUP_SECONDS,
      what: "to stop, start, JIT-compile and warm up the NVFP4 kernels on sm_120",
    };
  }
  return { seconds: STARTUP_SECONDS, what: "to stop, start and capture CUDA graphs" };
}

/** What the downtime estimate assumes, in one line: "223 GB of weights read … (2.5 min) + 4 min to …". */
export function downtimeBasis(
  weightBytes: number,
  startup: { seconds: number; what: string },
  preloaded = false,
): string {
  const rate = preloaded ? PAGE_CACHED_BYTES_PER_SECOND : LOAD_BYTES_PER_SECOND;
  const from = preloaded ? "from the page cache (preloaded)" : "cold from disk";
  return `${formatGB(weightBytes)} of weights read ${from} at ${rate / 1e9} GB/s (${roughly(weightBytes / rate)}) + ${roughly(startup.seconds)} ${startup.what}`;
}
