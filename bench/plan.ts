import type { AckOptions } from "./ack.ts";
import type { AlertOptions } from "./alert-latency.ts";
import { shippedSwapSettings } from "./bot-process.ts";
import type { ConcurrentOptions } from "./concurrent-swaps.ts";
import type { FailoverOptions } from "./failover.ts";
import type { FastOptions } from "./fast-switch.ts";
import type { FaultsOptions } from "./faults.ts";
import type { FrontDoorOptions } from "./front-door.ts";
import type { MonitorOptions } from "./monitor-cost.ts";
import type { ResumeOptions } from "./resume.ts";
import type { RolloutOptions } from "./rollout.ts";
import type { Speed } from "./section.ts";
import type { SwapOptions } from "./swap-overhead.ts";

/** How big each section runs: the full run people read, or the quick smoke CI runs so the bench keeps working. */
export interface BenchPlan {
  ack: AckOptions;
  swap: SwapOptions;
  vllm: SwapOptions;
  concurrent: ConcurrentOptions;
  alert: AlertOptions;
  monitor: MonitorOptions;
  resume: ResumeOptions;
  frontdoor: FrontDoorOptions;
  failover: FailoverOptions;
  faults: FaultsOptions;
  fast: FastOptions;
  rollout: RolloutOptions;
}

/** The figures of the issues: 500 acks, a 40 s / 30 s / 10 s swap, 25 swaps at once in one channel, 1,000 hosts every 15 s for 2 minutes. */
const SHIPPED: Speed = { swaps: shippedSwapSettings(), engine: {} };

export const FULL: BenchPlan = {
  ack: { requests: 500, warmup: 50 },
  swap: { downloadSeconds: 40, buildSeconds: 30, loadSeconds: 10, speed: SHIPPED },
  vllm: { downloadSeconds: 40, buildSeconds: 30, loadSeconds: 10, speed: SHIPPED },
  concurrent: { swaps: 25, speed: SHIPPED },
  alert: { repeats: 20, intervalSeconds: 1, threshold: 3 },
  monitor: { hosts: 1000, intervalSeconds: 15, durationSeconds: 120 },
  resume: { downloadSeconds: 10, speed: SHIPPED },
  frontdoor: { loadSeconds: 10, everyMs: 100, speed: SHIPPED },
  failover: { speed: SHIPPED },
  // the campaign's own speed (a 1 s load, a 4 s flip-back window): 210 swaps (≥ 200 judged) in about 35 min
  faults: { runs: 210, hostsPerMode: 1, deadlineSeconds: 180 },
  // the parked, reload and revision hosts at the cold start of the source their resume comes from (97.7 s);
  // the warm host's loads at 10 s (its JIT, 11.7 times that, is what the ratio is about)
  fast: { coldStartSeconds: 97.7, loadSeconds: 10, everyMs: 100, speed: SHIPPED },
  // the 20 hosts, four switching at once
  rollout: { hosts: 20, maxUnavailable: 4, speed: SHIPPED },
};

const FAST: Speed = {
  swaps: { pollSeconds: 0.5, cardUpdateSeconds: 1, lockSeconds: 5, stalledCheckSeconds: 1 },
  engine: { loadSeconds: 0.2, warmupMs: 20, msPerToken: 0.1, ttftMs: 1 },
  slackRateScale: 100,
};

/** Small counts and short stages: every figure is produced, none is meaningful. */
export const QUICK: BenchPlan = {
  ack: { requests: 40, warmup: 5 },
  swap: { downloadSeconds: 1.5, buildSeconds: 1, loadSeconds: 0.3, speed: FAST },
  vllm: { downloadSeconds: 1.5, buildSeconds: 1, loadSeconds: 0.3, speed: FAST },
  concurrent: { swaps: 2, speed: FAST },
  alert: { repeats: 2, intervalSeconds: 1, threshold: 2 },
  monitor: { hosts: 10, intervalSeconds: 2, durationSeconds: 4 },
  resume: { downloadSeconds: 2, speed: FAST },
  frontdoor: { loadSeconds: 1, everyMs: 200, speed: FAST },
  failover: { speed: FAST },
  faults: { runs: 3, hostsPerMode: 1, deadlineSeconds: 120 },
  fast: { coldStartSeconds: 1, loadSeconds: 1, everyMs: 200, speed: FAST },
  rollout: { hosts: 3, maxUnavailable: 2, speed: FAST },
};
