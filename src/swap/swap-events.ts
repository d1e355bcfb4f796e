import { z } from "zod";
import { benchResultSchema } from "../engine/bench-serving.ts";
import { ENGINE_KINDS } from "../engine/engine-kind.ts";

/*
 * What happened in a swap, as the stages tell it. Stages emit these; the store keeps them in order with
 * the record (in the same transaction); the reporter turns them into the swap's thread, once each, in
 * order, whenever Slack answers. The card is drawn from the record itself, so stage progress needs no
 * event. Events carry facts (ids, numbers, log lines), never Slack text.
 */

/** Log and journal lines an event may carry: the last ones, each cut, so an event stays small. */
export const EVENT_LOG_LINES = 40;
export const EVENT_LINE_CHARS = 300;

const lines = z.array(z.string().max(EVENT_LINE_CHARS)).max(EVENT_LOG_LINES);
const benchPair = z.object({ single: benchResultSchema, loaded: benchResultSchema });
const planStatus = z.enum(["dry-run", "refused"]);

/** An approver decided on a plan: a swap's, or a rollout's (src/rollout/rollout-record.ts). */
export const approvalDecidedSchema = z.object({
  type: z.literal("approval-decided"),
  planHash: z.string(),
  approved: z.boolean(),
  by: z.string(),
  via: z.enum(["reaction", "button", "api"]),
});

export const swapEventSchema = z.discriminatedUnion("type", [
  /** A plan that goes no further: a dry run, or one that failed a check (posted, nothing touched). */
  z.object({ type: z.literal("planned"), planHash: z.string(), status: planStatus }),
  /** The plan waits for a decision; `replaces` is the plan it replaces (its approval, if any, is void). */
  z.object({
    type: z.literal("approval-requested"),
    planHash: z.string(),
    expiresAt: z.string(),
    replaces: z.object({ planHash: z.string(), voided: z.boolean(), why: z.string() }).optional(),
  }),
  /** An approver decided (written by the approval gate, not by a stage). */
  approvalDecidedSchema,
  /** The plan can no longer be decided on: nobody did in time, or the swap was cancelled. */
  z.object({
    type: z.literal("approval-closed"),
    planHash: z.string(),
    why: z.enum(["expired", "cancelled"]),
    by: z.string().optional(),
  }),
  z.object({
    type: z.literal("download-retrying"),
    attempt: z.number(),
    state: z.string(),
    exitCode: z.number().optional(),
    log: lines,
  }),
  z.object({
    type: z.literal("downloaded"),
    files: z.number(),
    /** Bytes moved and verified. */
    bytes: z.number(),
    /** The real model's size, when the bench serves its weight files scaled down (bench.weightScale). */
    realBytes: z.number().optional(),
    /** In a rollout: the peer the files were copied from (src/host/peer-copy.ts), not the Hub. */
    from: z.string().optional(),
  }),
  z.object({ type: z.literal("download-failed"), log: lines }),
  /** A copy from a peer failed: the files come from the Hub instead. */
  z.object({ type: z.literal("peer-copy-failed"), from: z.string(), log: lines }),
  z.object({
    type: z.literal("built"),
    commit: z.string(),
    version: z.string(),
    /** The engine built (events from before there was a choice: SGLang, store migration v3). */
    engine: z.enum(ENGINE_KINDS),
  }),
  z.object({ type: z.literal("build-failed"), log: lines }),
  /** The new unit started; `from` is the unit stopped for it (none when the host served nothing). */
  z.object({
    type: z.literal("switched"),
    from: z.string().optional(),
    to: z.string(),
    /** The old unit's stop: how long it took (its drain), and whether the front door held new requests. */
    stopSeconds: z.number().optional(),
    held: z.boolean().optional(),
    /** The old unit was parked (swaps.sleepMode), not stopped: `stopSeconds` is then its park. */
    parked: z.boolean().optional(),
    /** Blue/green: started beside the old unit (which keeps serving), on these GPUs and this port. */
    beside: z
      .object({ devices: z.array(z.number()), port: z.number(), gpus: z.enum(["spare", "shared"]) })
      .optional(),
  }),
  /**
   * Blue/green: the front door sends new requests to `to` (the new unit) and drains `from`; the old unit
   * stays loaded until `flipBackUntil` (a cancel meanwhile flips back).
   */
  z.object({
    type: z.literal("flipped"),
    from: z.string(),
    to: z.string(),
    flipBackUntil: z.string(),
  }),
  /** Blue/green: the old unit stopped after the window, once drained (or its bound ran out: `cut`). */
  z.object({
    type: z.literal("retired"),
    unit: z.string(),
    drainSeconds: z.number(),
    cut: z.number(),
  }),
  /** Blue/green on shared GPUs: the new unit restarts at full memory; the front door holds meanwhile. */
  z.object({ type: z.literal("restarting"), unit: z.string(), holdSeconds: z.number() }),
  /** ...and serves again: at full memory (`failed` absent), or back at its fraction beside (`failed`: why). */
  z.object({
    type: z.literal("restarted"),
    unit: z.string(),
    heldSeconds: z.number(),
    kvPerGpuBytes: z.number(),
    failed: z.string().optional(),
  }),
  /** Blue/green rollback: the front door sends requests to the old unit again, which never stopped. */
  z.object({ type: z.literal("flipped-back"), to: z.string(), unit: z.string() }),
  /** A cancel in the flip-back window not carried out: the old unit no longer serves; the new one stays. */
  z.object({
    type: z.literal("flip-back-refused"),
    unit: z.string(),
    serving: z.string(),
    why: z.string(),
  }),
  /** Blue/green: a gate failed before the flip; the new unit was stopped and production never saw it. */
  z.object({ type: z.literal("discarded"), unit: z.string(), serving: z.string() }),
  /** The new weights were read into the page cache before the stop (or that failed, and why). */
  z.object({ type: z.literal("preloaded"), ok: z.boolean(), seconds: z.number(), detail: z.string() }),
  /** The old unit parked (sleep mode) instead of stopped; `failed`: it would not sleep and was stopped. */
  z.object({
    type: z.literal("parked"),
    unit: z.string(),
    seconds: z.number(),
    failed: z.string().optional(),
    /** What the fullest of its GPUs held once parked, as nvidia-smi showed it. */
    keptGiB: z.number().optional(),
  }),
  /**
   * The parked old unit after the swap: woken by a rollback (and sane again), reloaded from disk (it would
   * not wake, or woke and failed its sanity prompts: `why`), or stopped once the new model was released.
   */
  z.object({
    type: z.literal("unparked"),
    unit: z.string(),
    how: z.enum(["woken", "reloaded", "stopped"]),
    seconds: z.number().optional(),
    why: z.string().optional(),
  }),
  /**
   * A new revision loaded into the running engine (`mechanism`: update_weights_from_disk): in `seconds`,
   * the same process (`mainPid`); or `refused`, the engine's answer, with the old weights kept.
   */
  z.object({
    type: z.literal("updated"),
    unit: z.string(),
    mechanism: z.string(),
    seconds: z.number().optional(),
    mainPid: z.number().optional(),
    refused: z
      .string()
      .max(EVENT_LINE_CHARS * 2)
      .optional(),
  }),
  /** An in-place swap undone: the old weights loaded back (`seconds`), or the unit restarted from its file. */
  z.object({
    type: z.literal("reverted"),
    unit: z.string(),
    how: z.enum(["loaded-back", "restarted"]),
    seconds: z.number().optional(),
    why: z.string().optional(),
  }),
  /** The front door holds new requests and drains the old unit: how long the drain took, what it cut. */
  z.object({
    type: z.literal("drained"),
    server: z.string(),
    seconds: z.number(),
    cut: z.number(),
    holdSeconds: z.number(),
  }),
  /** The front door sends the held requests (and new ones) to the unit behind `server`. */
  z.object({ type: z.literal("released"), server: z.string(), heldSeconds: z.number() }),
  z.object({ type: z.literal("health-failed"), unit: z.string(), why: z.string(), journal: lines }),
  z.object({ type: z.literal("healthy"), unit: z.string(), downtimeSeconds: z.number() }),
  z.object({
    type: z.literal("sanity-failed"),
    summary: z.string(),
    prompts: z.array(
      z.object({ verdict: z.string(), prompt: z.string(), output: z.string(), detail: z.string() }),
    ),
  }),
  z.object({
    type: z.literal("benchmarked"),
    current: benchPair,
    previous: z
      .object({
        model: z.string(),
        single: benchResultSchema,
        loaded: benchResultSchema.optional(),
        /** How the numbers compared with were taken: the last swap's benchmark, or a baseline before this switch. */
        basis: z.enum(["last-swap", "probe", "full"]).optional(),
        /** The engine they ran on (events from before there was a choice: SGLang, store migration v3). */
        engine: z.enum(ENGINE_KINDS),
      })
      .optional(),
    /** The engine this benchmark ran on (events from before there was a choice: SGLang, store migration v3). */
    engine: z.enum(ENGINE_KINDS),
    /** Blue/green: run before the flip (beside production), at a reduced load, or after it. */
    when: z.enum(["before-flip", "reduced", "after-flip"]).optional(),
  }),
  z.object({ type: z.literal("benchmark-failed"), error: z.string() }),
  /** The rollback begins: back to `to` (undefined: nothing served before, `stopping` is stopped). */
  z.object({
    type: z.literal("rolling-back"),
    to: z.string().optional(),
    stopping: z.string(),
    why: z.string(),
  }),
  z.object({ type: z.literal("rollback-failed"), unit: z.string(), why: z.string(), journal: lines }),
  /**
   * Disk retention at the swap's end (retention.afterSwap): what it deleted, what df says that freed, what
   * it kept; or why it could not (the swap's outcome stands either way).
   */
  z.object({
    type: z.literal("disk-reclaimed"),
    deleted: z.array(z.string().max(EVENT_LINE_CHARS)).max(EVENT_LOG_LINES),
    deletedCount: z.number().int(),
    freedBytes: z.number(),
    kept: z.number().int(),
    error: z.string().max(EVENT_LINE_CHARS).optional(),
  }),
  /** The swap ended; the record holds its outcome and reason. */
  z.object({ type: z.literal("finished"), outcome: z.string() }),
]);

export type SwapEvent = z.infer<typeof swapEventSchema>;
export type SwapEventType = SwapEvent["type"];

/** An event as kept: with when it happened. */
export const storedSwapEventSchema = swapEventSchema.and(z.object({ at: z.string() }));
export type StoredSwapEvent = z.infer<typeof storedSwapEventSchema>;

/** The last lines of a log, each cut, as an event may carry them. */
export function eventLines(log: readonly string[]): string[] {
  return log
    .slice(-EVENT_LOG_LINES)
    .map((line) => (line.length > EVENT_LINE_CHARS ? `${line.slice(0, EVENT_LINE_CHARS - 1)}…` : line));
}
