import { formatGB, formatGiB } from "./byte-units.ts";
import type { ClientPlan, HostFacts } from "./types.ts";

/** The weights must fit in this share of the RAM available, or they are evicted again before the load. */
const PAGE_CACHE_SHARE = 0.8;

/**
 * RAM is counted as `free` counts it (GiB, TiB), and the weights beside it in the same unit: "1.1 TB of RAM"
 * beside the host's "1.0 TiB" read as two amounts.
 *
 * Whether the new weights are read into the page cache before the old unit stops (`vmtouch -t`), so the
 * new unit's load reads memory (≈ 1 s for the seeds' model, DESIGN §9) instead of disk (13–26 s at
 * NVMe rates): only when vmtouch is on the host and the weights fit well inside the RAM available now.
 */
export function preloadPlan(host: HostFacts, weightBytes: number): NonNullable<ClientPlan["preload"]> {
  const weights = formatGB(weightBytes);
  if (host.vmtouch !== true)
    return {
      will: false,
      why: `vmtouch is not installed on the host (apt-get install vmtouch): the new unit reads its ${weights} of weights from disk`,
    };
  const available = host.memoryAvailableBytes;
  if (available === undefined || available <= 0)
    return { will: false, why: "the host's available RAM could not be read: the weights are read from disk" };
  if (weightBytes > PAGE_CACHE_SHARE * available)
    return {
      will: false,
      why: `${formatGiB(weightBytes)} of weights against ${formatGiB(available)} of RAM available: they would not stay in the page cache, so the new unit reads them from disk`,
    };
  return {
    will: true,
    why: `${formatGiB(weightBytes)} of weights fit in the ${formatGiB(available)} of RAM available: they are read into the page cache before the old unit stops, so the load reads memory, not disk`,
  };
}
