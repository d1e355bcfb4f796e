import type { SwapRequest } from "../grammar/swap-request.ts";
import type { ModelInfo } from "../hub/types.ts";
import type { SwapPlan } from "../plan/types.ts";

export type SwapOutcome =
  | "succeeded"
  | "rolled_back"
  | "failed"
  | "rejected"
  | "expired"
  | "cancelled"
  | "planned";

/** The pipeline's stages, in order (DESIGN.md §4). */
export const STAGES = [
  "resolve",
  "preflight",
  "download",
  "build",
  "approval",
  "switch",
  "health",
  "sanity",
  "benchmark",
  "finish",
] as const;
export type StageName = (typeof STAGES)[number];

export interface StageState {
  state: "pending" | "running" | "done" | "failed" | "skipped";
  startedAt?: string;
  finishedAt?: string;
  /** One line for the card: "62 % · 210 MB/s · ETA 4 min", "commit 1a2b3c4", "NaN in output". */
  detail?: string;
}

/** A detached task on the host: where its pid, log and exit status live. */
export interface TaskHandle {
  dir: string;
  startedAt: string;
  attempts: number;
}

export interface Decision {
  approved: boolean;
  by: string;
  at: string;
  /** The plan the decision was about: a later plan that differs in what matters voids an approval. */
  planHash: string;
  via: "reaction" | "button";
}

export interface SwapRecord {
  id: string;
  host: string;
  requester: string;
  channel: string;
  createdAt: string;
  request: SwapRequest;
  /** Set for `/llm rollback`: the unit (and the swap that installed it, if any) to go back to. */
  rollbackTo?: { unit: string; swapId?: string };
  /** The stage the job resumes at. */
  step:
    | "resolve"
    | "preflight"
    | "prepare"
    | "switch"
    | "health"
    | "sanity"
    | "benchmark"
    | "finish"
    | "rollback"
    | "done";
  stages: Record<StageName, StageState>;
  outcome?: SwapOutcome;
  /** Why it failed or rolled back, for people. */
  reason?: string;
  /** The live card (parent message) and the plan message in its thread. */
  cardTs?: string;
  planTs?: string;
  model?: ModelInfo;
  plan?: SwapPlan;
  planHash?: string;
  approvalExpiresAt?: string;
  decision?: Decision;
  tasks: { download?: TaskHandle; build?: TaskHandle };
  engine?: { commit: string; version: string; previousCommit?: string };
  /** What served before: the unit to roll back to. */
  previous?: { unit: string; repo?: string };
  switch?: { startedAt: string; oldStoppedAt?: string; newStartedAt?: string; done?: boolean };
  healthyAt?: string;
  downtimeSeconds?: number;
  sanity?: { ok: boolean; summary: string };
  benchmark?: unknown;
  rollback?: { ok: boolean; detail: string };
  /** What a swap that ended before its switch did to the engine the build had changed (put back, or why not). */
  engineRestore?: string;
  /** When the rollback began (its announcement is posted once, however often it is retried). */
  rollbackStartedAt?: string;
  /**
   * Set while the host cannot be reached (connection refused or lost, command timed out): since when,
   * how many tries, the last error. Cleared by the next step that gets through.
   */
  hostTrouble?: { since: string; tries: number; last: string };
  lastCardUpdate?: string;
  download?: { bytes: number; at: string; rate?: number };
  finishedAt?: string;
}

export function newStages(): Record<StageName, StageState> {
  return Object.fromEntries(STAGES.map((s) => [s, { state: "pending" }])) as Record<StageName, StageState>;
}
