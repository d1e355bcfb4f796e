import { z } from "zod";
import { benchResultSchema } from "../engine/bench-serving.ts";
import { ENGINE_KINDS } from "../engine/engine-kind.ts";
import { startupPhasesSchema } from "../engine/startup-phases.ts";
import { settingSetSchema } from "../grammar/flag-setting.ts";
import { ROLLOUT_ID } from "../grammar/rollout-id.ts";
import { SWAP_ID } from "../grammar/swap-id.ts";
import { modelSummarySchema } from "../hub/types.ts";
import { modelFactsSchema, swapPlanSchema } from "../plan/types.ts";

/*
 * A swap's record: what it was asked, where it is, what it found and did. One JSON document in Redis per
 * swap, written only by the run that holds the swap's lease, parsed with this schema whenever it is read
 * (a corrupt or old record is reported, never trusted). It holds facts, not Slack text: people are
 * named by their ids, and the reporter turns the record into the card.
 */

export const SWAP_OUTCOMES = [
  "succeeded",
  "rolled_back",
  "failed",
  "rejected",
  "expired",
  "cancelled",
  "planned",
] as const;
export type SwapOutcome = (typeof SWAP_OUTCOMES)[number];

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

/**
 * The steps a swap's job runs, in order; `rollback` after a failure from the switch on. A blue/green
 * swap runs the benchmark before `release` (the flip) when the new unit has GPUs of its own, and
 * `retire` (the flip-back window, then the old unit's stop) before `finish`.
 */
export const STEPS = [
  "resolve",
  "preflight",
  "prepare",
  "switch",
  "health",
  "sanity",
  "release",
  "benchmark",
  "retire",
  "restart",
  "finish",
  "rollback",
  "done",
] as const;
export type SwapStep = (typeof STEPS)[number];

const isoTime = z.iso.datetime({ offset: true });

export const stageStateSchema = z.object({
  state: z.enum(["pending", "running", "done", "failed", "skipped"]),
  startedAt: isoTime.optional(),
  finishedAt: isoTime.optional(),
  /** One plain line for the card: "62 % · 210 MB/s · ETA 4 min", "commit 1a2b3c4", "NaN in output". */
  detail: z.string().optional(),
});
export type StageState = z.infer<typeof stageStateSchema>;

/** A detached task on the host: where its pid, log and exit status live. */
export const taskHandleSchema = z.object({
  dir: z.string(),
  startedAt: isoTime,
  attempts: z.number().int().min(1),
});
export type TaskHandle = z.infer<typeof taskHandleSchema>;

export const decisionSchema = z.object({
  approved: z.boolean(),
  /** Who decided: a Slack user id, or `operator:<name>` (the CLI, the HTTP API). */
  by: z.string(),
  at: isoTime,
  /** The plan the decision was about: a later plan that differs in what matters voids an approval. */
  planHash: z.string(),
  via: z.enum(["reaction", "button", "api"]),
});
export type Decision = z.infer<typeof decisionSchema>;

export const swapRequestSchema = z.object({
  model: z.object({ repo: z.string(), revision: z.string() }),
  host: z.string().optional(),
  tp: z.number().int().optional(),
  dryRun: z.boolean(),
  /** `--engine-ref`; absent: the model's profile's, else the host's default ref, else main. */
  engineRef: z.string().optional(),
  /** `--engine`: the engine to serve with; absent: the profile's, else the host's. */
  engine: z.enum(ENGINE_KINDS).optional(),
  /** `--set name=value`: this swap's engine settings (names swaps.settable allows). */
  sets: z.array(settingSetSchema).max(16).optional(),
});

export const swapRecordSchema = z.object({
  id: z.string().regex(SWAP_ID),
  host: z.string(),
  /** Who asked: a Slack user id, or `operator:<name>` (the CLI, the HTTP API). */
  requester: z.string(),
  channel: z.string(),
  createdAt: isoTime,
  request: swapRequestSchema,
  /**
   * One host's swap of a rollout (src/rollout/): its plan is approved with the rollout's, and the rollout
   * gives it that approval when its wave starts (it waits in prepare till then, its files downloaded).
   */
  rollout: z.object({ id: z.string().regex(ROLLOUT_ID), wave: z.number().int().min(0) }).optional(),
  /** Set for `/llm rollback`: the unit (and the swap that installed it, if any) to go back to. */
  rollbackTo: z.object({ unit: z.string(), swapId: z.string().optional() }).optional(),
  /** The step the job resumes at. */
  step: z.enum(STEPS),
  stages: z.record(z.enum(STAGES), stageStateSchema),
  outcome: z.enum(SWAP_OUTCOMES).optional(),
  /** Why it failed or rolled back, in plain words (errors carry their code and fix). */
  reason: z.string().optional(),
  /** The model, pinned to a commit, and what its config says (the config files themselves are not kept). */
  model: modelSummarySchema.optional(),
  facts: modelFactsSchema.optional(),
  plan: swapPlanSchema.optional(),
  planHash: z.string().optional(),
  /** The approval window of the current plan. */
  approval: z.object({ requestedAt: isoTime, expiresAt: isoTime }).optional(),
  decision: decisionSchema.optional(),
  /**
   * Who cancelled it, once the swap has acted on it. `refused`: why the cancel was not carried out (a
   * blue/green flip back to an old unit that no longer serves); the swap went on.
   */
  cancel: z.object({ by: z.string(), at: isoTime, refused: z.string().optional() }).optional(),
  tasks: z.object({ download: taskHandleSchema.optional(), build: taskHandleSchema.optional() }),
  engine: z.object({ commit: z.string(), version: z.string() }).optional(),
  /** What served before: the unit to roll back to. */
  previous: z
    .object({
      unit: z.string(),
      repo: z.string().optional(),
      /** The commit it served (absent: not known, the config's unit), what an in-place swap goes back to. */
      sha: z.string().optional(),
      /** The port it listens on (absent: the host's servingPort). */
      port: z.number().int().optional(),
      /** The engine it runs (records from before there was a choice: the host's, store migration v3). */
      engine: z.enum(ENGINE_KINDS),
    })
    .optional(),
  switch: z
    .object({
      startedAt: isoTime,
      /** The old unit's process when the switch began: the new unit must be served by another. */
      oldMainPid: z.number().int().optional(),
      /** The page-cache preload of the new weights (plan.clients.preload), before anything stopped. */
      preload: z.object({ ok: z.boolean(), seconds: z.number(), detail: z.string() }).optional(),
      /** When `systemctl disable --now` of the old unit began (its stop drains, SGLang's SIGTERM). */
      stopBeganAt: isoTime.optional(),
      /**
       * The park request was sent (before its answer): a worker that finds this without `parked` does not
       * know what the engine did with it, and stops the unit instead of asking again (an SGLang release or
       * resume sent twice can take the server down).
       */
      parkBeganAt: isoTime.optional(),
      oldStoppedAt: isoTime.optional(),
      newStartedAt: isoTime.optional(),
      /** Blue/green: the new unit was started beside the old one, which kept serving. */
      beside: z.boolean().optional(),
      /**
       * The old unit parked (plan.clients.park) instead of stopped: when it fell asleep, when it was woken
       * (a rollback) or stopped (the new model released); `failed`: it would not sleep, and was stopped.
       * A woken unit answers the sanity prompts again: `sane` when it did; `reloadedAt` when it did not
       * (or would not wake) and was restarted from disk.
       */
      parked: z
        .object({
          at: isoTime,
          failed: z.string().optional(),
          /** The wake request was sent; `wokenAt`: it was answered 200. */
          wakeBeganAt: isoTime.optional(),
          wokenAt: isoTime.optional(),
          wakeSeconds: z.number().optional(),
          sane: z.boolean().optional(),
          reloadedAt: isoTime.optional(),
          stoppedAt: isoTime.optional(),
        })
        .optional(),
      /**
       * A new revision loaded into the running engine (plan.clients.inPlace): when the load was asked for
       * (the old weights stopped serving then), when the engine answered that the new ones serve and how
       * long it took, or why it refused (it kept the old ones); when the unit's file got the new model
       * path; and a rollback's way back: the old weights loaded back, or the unit restarted from its file.
       */
      inPlace: z
        .object({
          beganAt: isoTime,
          at: isoTime.optional(),
          seconds: z.number().optional(),
          refused: z.string().optional(),
          unitWrittenAt: isoTime.optional(),
          revertBeganAt: isoTime.optional(),
          revertedAt: isoTime.optional(),
          restartedAt: isoTime.optional(),
        })
        .optional(),
      done: z.boolean().optional(),
    })
    .optional(),
  /**
   * The front door's part of a cold swap (hosts[].frontDoor): since when new requests are held, when the
   * old unit's drain ended and how many requests were still in flight on it when its bound ran out (cut
   * by its stop), and when the held requests were sent to the new unit (or held again by a rollback).
   */
  frontDoor: z
    .object({
      heldAt: isoTime,
      drainedAt: isoTime.optional(),
      cut: z.number().int().min(0).optional(),
      releasedAt: isoTime.optional(),
      /** A rollback held again what the switch had released: the new unit was reached by clients. */
      heldAgain: z.literal(true).optional(),
    })
    .optional(),
  /**
   * A blue/green swap's flip (plan.clients.blueGreen): when the front door sent new requests to the new
   * unit's slot (`to`) and drained the old one's (`from`); when the old unit's drain ended and how many
   * requests it still had in flight then; when its stop began and ended (after the flip-back window);
   * when a rollback flipped back.
   */
  flip: z
    .object({
      from: z.string(),
      to: z.string(),
      flippedAt: isoTime,
      drainedAt: isoTime.optional(),
      cut: z.number().int().min(0).optional(),
      retiringAt: isoTime.optional(),
      retiredAt: isoTime.optional(),
      flippedBackAt: isoTime.optional(),
    })
    .optional(),
  /**
   * Blue/green on shared GPUs with swaps.restartAtFullMemory: the new unit's restart at full memory once
   * the old one stopped, step by step (held, drained with `cut` requests left, restarted, healthy, sane,
   * released); `failed`: why it did not serve at full memory, and then `reverted` once the unit serves
   * again at the fraction it had beside the old one.
   */
  restart: z
    .object({
      heldAt: isoTime,
      drainedAt: isoTime.optional(),
      cut: z.number().int().min(0).optional(),
      restartedAt: isoTime.optional(),
      healthyAt: isoTime.optional(),
      releasedAt: isoTime.optional(),
      failed: z.string().optional(),
      reverted: z.boolean().optional(),
    })
    .optional(),
  healthyAt: isoTime.optional(),
  /**
   * The unit last found serving (healthy, on its port, as the unit modelswap started) and its process:
   * the final check expects that process still (another one means it crashed and was restarted).
   */
  verified: z.object({ unit: z.string(), mainPid: z.number().int(), at: isoTime }).optional(),
  /**
   * The last check before the outcome (jobs/swap/stages/final-check.ts): the unit the outcome names, as a
   * client sees it — what the thread says is what this saw.
   */
  finalCheck: z
    .object({ at: isoTime, unit: z.string(), ok: z.boolean(), mainPid: z.number().int(), detail: z.string() })
    .optional(),
  downtimeSeconds: z.number().optional(),
  /**
   * The new unit's start, from its process start to its first healthy answer (`loadSeconds`), and where it
   * went as the engine's own lines time it (src/engine/startup-phases.ts).
   */
  startup: startupPhasesSchema.extend({ loadSeconds: z.number().min(0) }).optional(),
  sanity: z.object({ ok: z.boolean(), summary: z.string() }).optional(),
  benchmark: z.object({ single: benchResultSchema, loaded: benchResultSchema }).optional(),
  /**
   * The outgoing model measured before the switch, for a host with no earlier numbers (swaps.baseline):
   * the single-stream run, and the loaded one where configured. `error` when it could not run.
   */
  baseline: z
    .object({
      model: z.string(),
      kind: z.enum(["probe", "full"]),
      single: benchResultSchema.optional(),
      loaded: benchResultSchema.optional(),
      error: z.string().optional(),
    })
    .optional(),
  rollback: z.object({ ok: z.boolean(), detail: z.string() }).optional(),
  /** Why it failed, for the end: the error's code and what to try (the one-line reason is `reason`). */
  failure: z.object({ code: z.string(), fix: z.string() }).optional(),
  /** When the rollback began (its announcement is emitted once, however often it is retried). */
  rollbackStartedAt: isoTime.optional(),
  /**
   * Set while the host cannot be reached (connection refused or lost, command timed out): since when,
   * how many tries, the last error. Cleared by the next step that gets through.
   */
  hostTrouble: z.object({ since: isoTime, tries: z.number(), last: z.string() }).optional(),
  download: z.object({ bytes: z.number(), at: isoTime, rate: z.number().optional() }).optional(),
  /**
   * In a rollout (src/host/peer-copy.ts): where this host's files come from. `copying` from the peer
   * `from` (as the download's task: `tasks.download`), `copied` once checked, `hub` when they come from
   * the Hub and `why` (the rollout's first host, no peer to copy from, a copy that failed).
   */
  peerCopy: z
    .object({
      state: z.enum(["copying", "copied", "hub"]),
      from: z.string().optional(),
      why: z.string().optional(),
    })
    .optional(),
  /** In a rollout: this host serves its verified files to its peers (`since`), or cannot (`unable`). */
  peerServing: z.object({ since: isoTime.optional(), unable: z.string().optional() }).optional(),
  finishedAt: isoTime.optional(),
});
export type SwapRecord = z.infer<typeof swapRecordSchema>;
export type SwapBenchmark = NonNullable<SwapRecord["benchmark"]>;

export function newStages(): Record<StageName, StageState> {
  return Object.fromEntries(STAGES.map((s) => [s, { state: "pending" }])) as Record<StageName, StageState>;
}
