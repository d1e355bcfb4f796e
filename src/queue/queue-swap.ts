import type { Store } from "../store/store.ts";
import type { SwapRecord } from "../swap/swap-record.ts";
import { urgentFor } from "../swap/urgency.ts";
import type { ReportQueue } from "./report-queue.ts";
import type { SwapQueue } from "./swap-queue.ts";

/** What queueing a swap needs: the store, the swaps' queue, the reporter's. */
export interface QueueSwapDeps {
  store: Store;
  swaps: Pick<SwapQueue, "enqueue">;
  reports: Pick<ReportQueue, "soon">;
}

/**
 * Saves a new swap, records its request in the audit stream (in the same transaction) and enqueues it.
 * Recorded before the job exists: a request the store cannot hold is refused, not run unrecorded. On any
 * failure the host lock the swap took is given back, and the error is thrown for the command to answer.
 */
export async function queueSwap(
  record: SwapRecord,
  detail: string,
  { store, swaps, reports }: QueueSwapDeps,
  lockedHost: boolean,
): Promise<void> {
  try {
    await store.swaps.save(record, {
      audit: [
        {
          at: record.createdAt,
          kind: "request",
          who: record.requester,
          host: record.host,
          swap: record.id,
          detail,
        },
      ],
    });
    await swaps.enqueue(record.id);
    // the job is written on the same connection: a replica has it before the requester hears "queued"
    await store.replicas.confirm(`swap ${record.id}'s job`);
  } catch (error) {
    if (lockedHost) await store.locks.unlockHost(record.host, record.id).catch(() => undefined);
    throw error;
  }
  // the card, at once (a worker's first save would ask too); not waited for: the ack goes out first, and
  // the reporter's sweep is behind it should this ask be lost. A rollout's host's card is not what anyone
  // waits for: its rollout's card and plan go first
  void reports.soon(record.id, urgentFor(record, true) ? "urgent" : "routine").catch(() => undefined);
}
