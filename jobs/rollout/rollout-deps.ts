import type { Clock } from "../../src/clock.ts";
import type { ConfigSource } from "../../src/config/live-config.ts";
import type { Logger } from "../../src/log.ts";
import type { ReportQueue } from "../../src/queue/report-queue.ts";
import type { SwapQueue } from "../../src/queue/swap-queue.ts";
import type { Store } from "../../src/store/store.ts";

/** What a rollout's job needs (jobs/rollout/advance-rollout.ts), and what one run of it answers. */
export interface RolloutDeps {
  config: ConfigSource;
  store: Store;
  reports: Pick<ReportQueue, "soon">;
  /** Wakes a host's swap parked in prepare (its wave started, or it was cancelled); queues an undo. */
  swapJobs: Pick<SwapQueue, "wake" | "enqueue">;
  log: Logger;
  clock?: Clock;
}

export type RolloutResult = { done: true } | { done: false; waitMs: number };
