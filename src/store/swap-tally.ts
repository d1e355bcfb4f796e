import { z } from "zod";
import type { Logger } from "../log.ts";
import type { RedisClient } from "../redis/redis-client.ts";
import { STAGES, type SwapRecord } from "../swap/swap-record.ts";
import { reportCorrupt, storeLog } from "./corrupt-value.ts";
import { DURATION_BUCKETS } from "./duration-buckets.ts";
import { keys } from "./keys.ts";
import type { SaveWrites } from "./save-writes.ts";

/**
 * The deployment's swap metrics, kept in Redis because a swap is advanced by whichever worker takes its
 * next step: a counter in one process's memory would hold a random part of it. Each swap is tallied
 * once, when the save that records its outcome commits (the tally is one of that save's writes), so a
 * worker killed and replaced mid-finish neither loses nor repeats it.
 */
export const SWAP_TALLY_KEY = keys.tally;
/** The ids of the swaps already tallied (one short member per finished swap). */
export const SWAP_TALLIED_KEY = keys.tallied;

/** Hash fields are JSON arrays, so host and stage names need no separator of their own. */
const name = z.string();
const fieldSchema = z.union([
  z.tuple([z.literal("swaps"), name, name]),
  z.tuple([z.literal("downtime_bucket"), name, name, name]),
  z.tuple([z.literal("downtime_sum"), name, name]),
  z.tuple([z.literal("downtime_last"), name]),
  z.tuple([z.literal("stage_bucket"), name, name]),
  z.tuple([z.literal("stage_sum"), name]),
  z.tuple([z.literal("pages"), name]),
]);
type Field = z.infer<typeof fieldSchema>;
/** A field and its value as HINCRBYFLOAT and HSET leave them: the field JSON, the value a finite number. */
const entrySchema = z.object({
  field: z
    .string()
    .transform((text, ctx) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        ctx.addIssue({ code: "custom", message: "not JSON" });
        return z.NEVER;
      }
    })
    .pipe(fieldSchema),
  value: z
    .string()
    .refine((t) => t.trim() !== "" && Number.isFinite(Number(t)), "not a number")
    .transform(Number),
});

/**
 * The service's downtime in a swap, the same number the card and the thread say: from the old unit's
 * stop to a healthy service (the new unit, or the old one after a rollback). When no service became
 * healthy (the rollback failed too), to the end of the swap. Undefined when nothing was stopped.
 */
export function downtimeOf(record: SwapRecord): number | undefined {
  if (record.downtimeSeconds !== undefined) return record.downtimeSeconds;
  const stopped = record.switch?.oldStoppedAt;
  if (stopped === undefined || record.finishedAt === undefined) return undefined;
  return Math.max(0, (Date.parse(record.finishedAt) - Date.parse(stopped)) / 1000);
}

function le(value: number): string {
  const bound = DURATION_BUCKETS.find((b) => value <= b);
  return bound === undefined ? "+Inf" : String(bound);
}

/** What a finished swap adds to the tally: (op, field, value) triples, flat. */
export function tallyOf(record: SwapRecord): string[] {
  const outcome = record.outcome ?? "failed";
  const ops: ["+" | "=", Field, number][] = [["+", ["swaps", record.host, outcome], 1]];
  const downtime = downtimeOf(record);
  if (downtime !== undefined) {
    ops.push(["+", ["downtime_bucket", record.host, outcome, le(downtime)], 1]);
    ops.push(["+", ["downtime_sum", record.host, outcome], downtime]);
    ops.push(["=", ["downtime_last", record.host], downtime]);
  }
  for (const name of STAGES) {
    const stage = record.stages[name];
    if (stage.state !== "done" && stage.state !== "failed") continue;
    if (stage.startedAt === undefined || stage.finishedAt === undefined) continue;
    const seconds = Math.max(0, (Date.parse(stage.finishedAt) - Date.parse(stage.startedAt)) / 1000);
    if (!Number.isFinite(seconds)) continue;
    ops.push(["+", ["stage_bucket", name, le(seconds)], 1]);
    ops.push(["+", ["stage_sum", name], seconds]);
  }
  // the rollback failed too: the channel was paged, the host serves nothing
  if (outcome === "failed" && record.rollback?.ok === false) ops.push(["+", ["pages", record.host], 1]);
  return ops.flatMap(([op, field, value]) => [op, JSON.stringify(field), String(value)]);
}

/**
 * Adds the tally of a finished swap to the writes of the save of its record (a record without an outcome adds
 * nothing). Made with the save, the tally and the ledger never disagree.
 */
export function tallyInTransaction(tx: SaveWrites, record: SwapRecord): void {
  if (record.outcome === undefined) return;
  tx.tallyOnce(SWAP_TALLY_KEY, SWAP_TALLIED_KEY, record.id, tallyOf(record));
}

/** What the tally holds, read back at scrape time. */
export interface SwapTally {
  swaps: { host: string; outcome: string; count: number }[];
  downtime: Map<string, { host: string; outcome: string; counts: Map<string, number>; sum: number }>;
  downtimeLast: Map<string, number>;
  stages: Map<string, { counts: Map<string, number>; sum: number }>;
  pages: Map<string, number>;
}

/**
 * The tally, parsed: a field or value that does not parse (changed by hand) is reported
 * (STORE_RECORD_INVALID) and left out, never counted; the others are still read.
 */
export async function readSwapTally(redis: RedisClient, log?: Logger): Promise<SwapTally> {
  const raw = await redis.hgetall(SWAP_TALLY_KEY);
  const tally: SwapTally = {
    swaps: [],
    downtime: new Map(),
    downtimeLast: new Map(),
    stages: new Map(),
    pages: new Map(),
  };
  for (const [key, text] of Object.entries(raw)) {
    const parsed = entrySchema.safeParse({ field: key, value: text });
    if (!parsed.success) {
      reportCorrupt(storeLog(log), "swap tally field", key.slice(0, 200), parsed.error);
      continue;
    }
    const { field, value }: { field: Field; value: number } = parsed.data;
    switch (field[0]) {
      case "swaps":
        tally.swaps.push({ host: field[1], outcome: field[2], count: value });
        break;
      case "downtime_bucket":
      case "downtime_sum": {
        const id = JSON.stringify([field[1], field[2]]);
        let series = tally.downtime.get(id);
        if (series === undefined) {
          series = { host: field[1], outcome: field[2], counts: new Map(), sum: 0 };
          tally.downtime.set(id, series);
        }
        if (field[0] === "downtime_sum") series.sum = value;
        else series.counts.set(field[3], value);
        break;
      }
      case "downtime_last":
        tally.downtimeLast.set(field[1], value);
        break;
      case "stage_bucket":
      case "stage_sum": {
        let series = tally.stages.get(field[1]);
        if (series === undefined) {
          series = { counts: new Map(), sum: 0 };
          tally.stages.set(field[1], series);
        }
        if (field[0] === "stage_sum") series.sum = value;
        else series.counts.set(field[2], value);
        break;
      }
      case "pages":
        tally.pages.set(field[1], value);
        break;
    }
  }
  return tally;
}
