import type { ModelSummary } from "../hub/types.ts";
import { weightFiles } from "../hub/weight-files.ts";
import { formatGB } from "./byte-units.ts";

/*
 * bench.weightScale: the demo and the test bench serve weight files at 1/N of their real size (so their
 * bytes really download and verify), and tell the bot N. The plan reasons with the real model's figures:
 * each weight file's size × N; every other file as served. In production N is 1 and nothing changes.
 */

/** Bytes of every file of the real model: the weight files × scale, the rest as the Hub lists them. */
export function realTotalBytes(
  model: Pick<ModelSummary, "weightBytes" | "totalBytes">,
  scale: number,
): number {
  return model.totalBytes + model.weightBytes * (scale - 1);
}

/**
 * What the download leaves on the Hub, for the plan and the card: "19,972 other files, 40.9 MB, left on
 * the Hub"; undefined when it fetches every file.
 */
export function leftOnHub(model: Pick<ModelSummary, "notFetched">): string | undefined {
  const left = model.notFetched;
  if (left === undefined || left.files === 0) return undefined;
  const files = `${left.files.toLocaleString("en-US")} other ${left.files === 1 ? "file" : "files"}`;
  return `${files}, ${formatGB(left.bytes)}, left on the Hub`;
}

/** The largest weight file of the real model (the largest file when it has none). */
export function realLargestShardBytes(model: Pick<ModelSummary, "files">, scale: number): number {
  const shards = weightFiles(model.files);
  if (shards.length === 0) return model.files.reduce((max, f) => Math.max(max, f.size), 0);
  return shards.reduce((max, f) => Math.max(max, f.size), 0) * scale;
}

/**
 * Bytes really moved, as a person reads them: "223 GB" in production (no `real`); on the bench the bytes
 * moved, labelled, with the real model's size beside them: "6.8 MB at bench scale (real model 223 GB)".
 */
export function movedBytes(served: number, real?: number): string {
  if (real === undefined) return formatGB(served);
  return `${formatGB(served)} at bench scale (real model ${formatGB(real)})`;
}

/** A size the plan reasons with: "223 GB", or on the bench "223 GB (6.8 MB at bench scale)". */
export function realSize(real: number, served: number, scale: number): string {
  if (scale === 1) return formatGB(served);
  return `${formatGB(real)} (${formatGB(served)} at bench scale)`;
}

/** The plan's one line about the bench, or undefined in production. */
export function benchScaleLine(scale: number): string | undefined {
  if (scale === 1) return undefined;
  return `Bench: the simulated Hub serves the weight files at 1/${scale} of their real size (bench.weightScale). Every figure in this plan is the real model's; times measured later (download, downtime) are the bench's.`;
}
