import type { ModelSummary } from "../hub/types.ts";
import { weightFiles } from "../hub/weight-files.ts";
import { formatGB } from "./byte-units.ts";
import type { HostFacts, PlanCheck } from "./types.ts";
import { realLargestShardBytes, realTotalBytes } from "./weight-scale.ts";

/** Parallel downloads of `hf download` (its --max-workers default). */
export const HF_MAX_WORKERS = 8;

/**
 * Free space for what is still to fetch, plus a margin: the real `hf download` restarts an in-progress
 * shard from byte 0 after its process dies and leaves the old partial file behind, so up to
 * max-workers (8) × the largest shard can be on disk twice. Sizes are the real model's (weight files ×
 * bench.weightScale; bytes already on disk likewise, at most the whole model).
 */
export function diskCheck(
  model: ModelSummary,
  host: HostFacts,
  modelsDir: string,
  scale: number,
  reclaimable: number,
): PlanCheck {
  const total = realTotalBytes(model, scale);
  const onDisk = Math.min(total, host.bytesOnDisk * scale);
  const toFetch = Math.max(0, total - onDisk);
  const shards = weightFiles(model.files);
  const largest = realLargestShardBytes(model, scale);
  const workers = Math.min(HF_MAX_WORKERS, Math.max(1, (shards.length > 0 ? shards : model.files).length));
  const margin = toFetch === 0 ? 0 : workers * largest;
  const need = toFetch + margin;
  const already = onDisk > 0 ? ` (${formatGB(onDisk)} already there)` : "";
  const marginText =
    margin === 0
      ? "nothing left to fetch"
      : `${formatGB(margin)} margin: ${workers === 1 ? "1 download" : `${workers} parallel downloads`} × ${formatGB(largest)} largest shard, since hf restarts an interrupted shard from 0 and leaves the partial file behind`;
  const detail = `${formatGB(toFetch)} to fetch${already} + ${marginText}; ${formatGB(host.freeDiskBytes)} free at ${modelsDir}`;
  if (host.freeDiskBytes >= need) return { id: "disk", ok: true, detail };
  const short = need - host.freeDiskBytes;
  const retention = `disk retention frees ${formatGB(reclaimable)} (old models, engine builds and unit files nothing needs: \`/llm gc ${host.host} --dry-run\` lists them)`;
  if (reclaimable >= short)
    return {
      id: "disk",
      ok: true,
      detail: `${detail}: ${formatGB(short)} short, but ${retention}; once approved, the swap deletes them before its download starts`,
      reclaimFirst: true,
    };
  if (reclaimable > 0)
    return {
      id: "disk",
      ok: false,
      detail: `${detail}: ${formatGB(short)} short, and ${retention}, ${formatGB(short - reclaimable)} too little`,
      fix: `free at least ${formatGB(short - reclaimable)} more in ${modelsDir} besides what \`/llm gc ${host.host}\` deletes (unpin an old model in retention.pinned, or lower retention.keep), or point the host's modelsDir at a bigger disk`,
    };
  return {
    id: "disk",
    ok: false,
    detail: `${detail}: ${formatGB(need - host.freeDiskBytes)} short`,
    fix: `free at least ${formatGB(need - host.freeDiskBytes)} in ${modelsDir} (old model directories no unit serves can go), or point the host's modelsDir at a bigger disk`,
  };
}
