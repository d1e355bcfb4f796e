import type { z } from "zod";
import { CodedError } from "../errors.ts";
import { redactSecretsInJson } from "../log.ts";
import type { RedisClient } from "../redis/redis-client.ts";
import { type StoredSwapEvent, storedSwapEventSchema } from "../swap/swap-events.ts";
import { type SwapRecord, swapRecordSchema } from "../swap/swap-record.ts";
import type { AuditEvent, AuditLog } from "./audit-log.ts";
import { invalidRecord } from "./corrupt-value.ts";
import { keys, swapKeys } from "./keys.ts";
import type { ReplicaAck } from "./replica-ack.ts";
import { SAVE_IF_ALLOWED, type SaveCondition, SaveWrites, saveRefused } from "./save-writes.ts";
import { tallyInTransaction } from "./swap-tally.ts";

/** How long finished swaps are kept (`records:` in the config). */
export interface Retention {
  /** A finished swap's record, events and reporter state, in days. */
  finishedDays: number;
  /** A dry run's, in hours. */
  dryRunHours: number;
}

export const DEFAULT_RETENTION: Retention = { finishedDays: 365, dryRunHours: 24 };

/**
 * The most a record may weigh. The seeds' model (an 8 MB config.json, 19 shards) makes a record of about
 * 30 KB; a record past this bound is a bug (something unbounded got in), refused rather than stored.
 */
export const MAX_RECORD_BYTES = 512 * 1024;

/** What is written with a record, atomically with it, and on what condition. */
export interface SaveExtras {
  /** The swap's new events, in order (the reporter posts them). */
  events?: readonly StoredSwapEvent[];
  /** Its new audit events. */
  audit?: readonly AuditEvent[];
  /** Writes of other store parts that belong to this save (what the host serves, the host lock). */
  also?: (writes: SaveWrites) => void;
  /** Who saves (a run, by its lease; or someone ending a stuck swap): refused, with nothing written, otherwise. */
  when?: SaveCondition;
}

/** Parses one stored JSON value with its schema; a mismatch throws STORE_RECORD_INVALID. */
export function parseStored<T>(schema: z.ZodType<T>, raw: string, what: string, id: string): T {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (error) {
    throw new CodedError(
      "STORE_RECORD_INVALID",
      `the ${what} ${id} in Redis is not JSON`,
      "it was changed by hand or cut short; restore it from a backup or delete it",
      { cause: error },
    );
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw invalidRecord(what, id, parsed.error);
  return parsed.data;
}

/**
 * Swap records, their events and the ledger. A record is saved with its new events, its audit events, its
 * ledger entries, its tally (once, when it has an outcome) and whatever else belongs to the save, by one
 * script that first checks who may save (src/store/save-writes.ts): what the record says and what was
 * reported, audited and counted never disagree, and a swap ends once. A finished
 * swap's keys expire after the retention; the ledger forgets them with it.
 */
export class SwapRecords {
  constructor(
    private readonly redis: RedisClient,
    private readonly audit: AuditLog,
    private readonly secrets: readonly string[],
    private readonly retention: Retention,
    private readonly replicas?: ReplicaAck,
  ) {}

  /** The record, parsed; undefined when there is none; STORE_RECORD_INVALID when it does not parse. */
  async get(id: string): Promise<SwapRecord | undefined> {
    const raw = await this.redis.get(keys.swap(id));
    return raw === null ? undefined : parseStored(swapRecordSchema, raw, "swap record", id);
  }

  /**
   * Saves the record with its extras, atomically with the save's conditions: a record that has ended is
   * never saved again (SWAP_ENDED: a swap ends once, and its thread's last line and its card say the same),
   * and `extras.when` says who may save (SWAP_SUPERSEDED otherwise). A refused save writes nothing.
   */
  async save(record: SwapRecord, extras: SaveExtras = {}): Promise<void> {
    const json = this.redact(JSON.stringify(record));
    if (Buffer.byteLength(json) > MAX_RECORD_BYTES) {
      throw new CodedError(
        "STORE_RECORD_TOO_LARGE",
        `swap ${record.id}'s record would be ${Math.round(Buffer.byteLength(json) / 1024)} KB (at most ${MAX_RECORD_BYTES / 1024} KB)`,
        "this is a bug in modelswap (something unbounded went into the record); the bot's log has the record's fields",
      );
    }
    const created = Date.parse(record.createdAt);
    const tx = new SaveWrites();
    tx.zadd(keys.ledger, created, record.id);
    tx.zadd(keys.hostLedger(record.host), created, record.id);
    const events = extras.events ?? [];
    if (events.length > 0) {
      tx.rpush(keys.swapEvents(record.id), ...events.map((e) => this.redact(JSON.stringify(e))));
    }
    // every save may change the card: the reporter looks (and, with new events, posts them)
    tx.zadd(keys.reportsPending, "NX", Date.now(), record.id);
    this.audit.inTransaction(tx, extras.audit ?? []);
    tallyInTransaction(tx, record);
    extras.also?.(tx);
    const ttlMs = this.ttlMs(record);
    if (ttlMs !== undefined) {
      for (const key of swapKeys(record.id)) tx.pexpire(key, ttlMs);
      // the ledger forgets what has expired: entries older than the longest retention go
      tx.zremrangebyscore(keys.ledger, "-inf", Date.now() - this.retention.finishedDays * 86_400_000);
      tx.zremrangebyscore(
        keys.hostLedger(record.host),
        "-inf",
        Date.now() - this.retention.finishedDays * 86_400_000,
      );
    }
    const when = extras.when;
    const writes = tx.scriptArgs();
    const answer = await this.redis.eval(
      SAVE_IF_ALLOWED,
      3 + writes.keys.length,
      keys.swap(record.id),
      keys.swapLease(record.id),
      keys.hostLock(record.host),
      ...writes.keys,
      when === undefined ? "" : "lease" in when ? when.lease : "-",
      when !== undefined && "stuck" in when ? record.id : "",
      json,
      ...writes.args,
    );
    const refused = saveRefused(record.id, record.host, String(answer));
    if (refused !== undefined) throw refused;
    // the saved step is what the next run trusts about the host: on a replica before the host is touched
    await this.replicas?.confirm(`swap ${record.id}'s record (step ${record.step})`);
  }

  /** How long a record is kept from now: undefined while the swap runs. */
  ttlMs(record: Pick<SwapRecord, "outcome">): number | undefined {
    if (record.outcome === undefined) return undefined;
    return record.outcome === "planned"
      ? this.retention.dryRunHours * 3_600_000
      : this.retention.finishedDays * 86_400_000;
  }

  /** Events from index `from` on, parsed (an unreadable one is reported, never posted). */
  async events(id: string, from: number): Promise<StoredSwapEvent[]> {
    const raws = await this.redis.lrange(keys.swapEvents(id), from, -1);
    return raws.map((raw, i) => parseStored(storedSwapEventSchema, raw, "swap event", `${id}#${from + i}`));
  }

  async eventCount(id: string): Promise<number> {
    return await this.redis.llen(keys.swapEvents(id));
  }

  /**
   * The ledger: swap records newest first (by creation time), of one host or of all, at most `limit`;
   * `before` (an ISO time, exclusive) pages further back. Records that no longer parse are left out and
   * named in `unreadable`; ids whose record expired are dropped from the ledger.
   */
  async history(query: {
    host?: string;
    limit: number;
    before?: string;
  }): Promise<{ records: SwapRecord[]; unreadable: string[] }> {
    if (query.limit <= 0) return { records: [], unreadable: [] };
    const index = query.host === undefined ? keys.ledger : keys.hostLedger(query.host);
    const max = query.before === undefined ? "+inf" : `(${Date.parse(query.before)}`;
    const ids = await this.redis.zrevrangebyscore(index, max, "-inf", "LIMIT", 0, query.limit);
    if (ids.length === 0) return { records: [], unreadable: [] };
    const raws = await this.redis.mget(ids.map((id) => keys.swap(id)));
    const records: SwapRecord[] = [];
    const unreadable: string[] = [];
    const gone: string[] = [];
    raws.forEach((raw, i) => {
      const id = ids[i]!;
      if (raw === null) {
        gone.push(id);
        return;
      }
      try {
        records.push(parseStored(swapRecordSchema, raw, "swap record", id));
      } catch {
        unreadable.push(id);
      }
    });
    if (gone.length > 0) await this.redis.zrem(index, ...gone);
    return { records, unreadable };
  }

  private redact(json: string): string {
    return redactSecretsInJson(json, this.secrets);
  }
}
