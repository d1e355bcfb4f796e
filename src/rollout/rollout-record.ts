import { z } from "zod";
import { wavePolicySchema } from "../config/groups-schema.ts";
import { ROLLOUT_ID } from "../grammar/rollout-id.ts";
import { SWAP_ID } from "../grammar/swap-id.ts";
import { approvalDecidedSchema } from "../swap/swap-events.ts";
import { decisionSchema, swapRequestSchema } from "../swap/swap-record.ts";

/*
 * A rollout's record: one model to many hosts (a config group, or `--hosts`), one swap per host, moved in
 * waves (src/rollout/waves.ts) behind one approval. One JSON document in Redis, written only by the run
 * that holds the rollout's lease (jobs/rollout/advance-rollout.ts). Each host's swap is an ordinary swap
 * with its own record, card and thread; its approval is the rollout's, given to it when its wave starts.
 */

const isoTime = z.iso.datetime({ offset: true });

export const ROLLOUT_OUTCOMES = [
  "succeeded",
  "halted",
  "rejected",
  "expired",
  "cancelled",
  "failed",
] as const;
export type RolloutOutcome = (typeof ROLLOUT_OUTCOMES)[number];

/** `plan`: the hosts' swaps plan; `approval`: the rollout's plan waits for a decision; `waves`: moving. */
export const ROLLOUT_STEPS = ["plan", "approval", "waves", "halting", "done"] as const;
export type RolloutStep = (typeof ROLLOUT_STEPS)[number];

export const rolloutHostSchema = z.object({
  host: z.string(),
  swapId: z.string().regex(SWAP_ID),
  /** The wave it is in (0: the canary). */
  wave: z.number().int().min(0),
  /** The plan hash of its swap that the rollout's plan was made of (and approved with). */
  planHash: z.string().optional(),
  /** When the rollout gave its swap the approval: its wave had started, and a batch had room for it. */
  releasedAt: isoTime.optional(),
  /**
   * A halted wave's host whose own swap had succeeded is taken back by a rollback swap the rollout
   * approves itself: that swap, whether it has been given the approval, and how it ended (or why it
   * could not be queued: `refused`).
   */
  undo: z
    .object({
      swapId: z.string().regex(SWAP_ID).optional(),
      releasedAt: isoTime.optional(),
      outcome: z.string().optional(),
      refused: z.string().optional(),
    })
    .optional(),
});
export type RolloutHost = z.infer<typeof rolloutHostSchema>;

/** What a wave's gate saw: each host's output tok/s and the canary's; why it stopped the rollout. */
export const waveResultSchema = z.object({
  wave: z.number().int().min(0),
  startedAt: isoTime,
  endedAt: isoTime.optional(),
  passed: z.boolean().optional(),
  /** Single-stream output tok/s per host, as its benchmark measured it. */
  tokS: z.record(z.string(), z.number()).default({}),
  why: z.string().optional(),
});
export type WaveResult = z.infer<typeof waveResultSchema>;

export const rolloutRecordSchema = z.object({
  id: z.string().regex(ROLLOUT_ID),
  /** Who asked: a Slack user id, or `operator:<name>`. */
  requester: z.string(),
  channel: z.string(),
  createdAt: isoTime,
  /** The swap asked of every host (its `host` unset), and the group it named (absent: `--hosts`). */
  request: swapRequestSchema,
  group: z.string().optional(),
  /** `/llm rollback --rollout`: the rollout whose hosts this one takes back (each host's swap a rollback). */
  undoes: z.string().regex(ROLLOUT_ID).optional(),
  policy: wavePolicySchema,
  hosts: z.array(rolloutHostSchema).min(1),
  step: z.enum(ROLLOUT_STEPS),
  /** The wave moving now (step `waves`), or the one that halted. */
  wave: z.number().int().min(0).default(0),
  planHash: z.string().optional(),
  approval: z.object({ requestedAt: isoTime, expiresAt: isoTime }).optional(),
  decision: decisionSchema.optional(),
  waves: z.array(waveResultSchema).default([]),
  outcome: z.enum(ROLLOUT_OUTCOMES).optional(),
  /** Why it halted or failed, in plain words. */
  reason: z.string().optional(),
  cancel: z.object({ by: z.string(), at: isoTime }).optional(),
  finishedAt: isoTime.optional(),
});
export type RolloutRecord = z.infer<typeof rolloutRecordSchema>;

/** The rollout's thread, as its job tells it (the reporter posts each once, in order). */
export const rolloutEventSchema = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("approval-requested"),
    planHash: z.string(),
    expiresAt: z.string(),
    replaces: z.object({ planHash: z.string(), why: z.string() }).optional(),
  }),
  /** Written by the approval gate (src/approval/decide.ts). */
  approvalDecidedSchema,
  z.object({
    type: z.literal("approval-closed"),
    planHash: z.string(),
    why: z.enum(["expired", "cancelled"]),
  }),
  z.object({ type: z.literal("wave-started"), wave: z.number().int(), hosts: z.array(z.string()) }),
  z.object({
    type: z.literal("wave-passed"),
    wave: z.number().int(),
    tokS: z.record(z.string(), z.number()),
    canaryTokS: z.number().optional(),
  }),
  z.object({
    type: z.literal("halted"),
    wave: z.number().int(),
    reason: z.string(),
    /** Hosts of earlier waves that serve the new model, left so; hosts never touched (their swaps cancelled). */
    kept: z.array(z.string()),
    untouched: z.array(z.string()),
    /** Hosts of the halted wave whose own swap succeeded: taken back (`undone`), or not (`finished`). */
    finished: z.array(z.string()),
    undone: z.array(z.string()).default([]),
    /** `/llm cancel` stopped it (who), not a failure; `approved`: whether the plan had been approved by then. */
    cancelledBy: z.string().optional(),
    approved: z.boolean().optional(),
  }),
  z.object({ type: z.literal("finished"), outcome: z.enum(ROLLOUT_OUTCOMES), reason: z.string().optional() }),
]);
export type RolloutEvent = z.infer<typeof rolloutEventSchema>;
