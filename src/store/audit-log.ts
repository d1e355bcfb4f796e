import { z } from "zod";
import { AUDIT_KINDS, type AuditEvent, type AuditKind } from "../audit/audit-event.ts";
import { type Logger, redactSecrets } from "../log.ts";
import type { RedisClient } from "../redis/redis-client.ts";
import { reportCorrupt, storeLog } from "./corrupt-value.ts";
import { keys } from "./keys.ts";
import type { SaveWrites } from "./save-writes.ts";

export { AUDIT_KINDS, type AuditEvent, type AuditKind, SYSTEM_ACTOR } from "../audit/audit-event.ts";

/** The audit stream's key, under the deployment's hash tag (same Redis Cluster slot as everything else). */
export const AUDIT_STREAM = keys.audit;

/** Default retention: about a million events — tens of thousands of swaps — so nothing is lost in practice. */
export const DEFAULT_AUDIT_MAX_ENTRIES = 1_000_000;

/**
 * A kind this version does not know: a later version added it. Kept and shown as it is (an audit trail
 * hides nothing), typed apart so no code mistakes it for one it knows.
 */
export interface UnknownAuditKind {
  unknown: string;
}

/** An event as read back, with its stream id (`<ms>-<seq>`, unique and ordered). */
export interface AuditEntry extends Omit<AuditEvent, "kind"> {
  id: string;
  kind: AuditKind | UnknownAuditKind;
}

const isoTime = z.iso.datetime({ offset: true });
/** A stream entry's fields as `fields()` writes them. */
const entrySchema = z.object({
  at: isoTime.optional(),
  kind: z
    .string()
    .min(1)
    .transform((k): AuditKind | UnknownAuditKind =>
      (AUDIT_KINDS as readonly string[]).includes(k) ? (k as AuditKind) : { unknown: k },
    ),
  who: z.string(),
  host: z.string().optional(),
  swap: z.string().optional(),
  stage: z.string().optional(),
  detail: z.string(),
  process: z.string().optional(),
});

export interface AuditLogOptions {
  /** `audit.maxEntries`: the stream is trimmed (approximately) to this many newest events. */
  maxEntries?: number;
  /** Secret values (tokens) that must never be stored: replaced by `[redacted]`, as in Slack posts. */
  secrets?: readonly string[];
  /** Where an entry that does not parse is reported (it is left out of what is read). */
  log?: Logger;
}

/** The longest detail kept; more is cut with a mark (an event is one line, not a log). */
export const MAX_DETAIL_CHARS = 2000;

const FIELDS = ["at", "kind", "who", "host", "swap", "stage", "detail", "process"] as const;
const PAGE = 500;

/**
 * The append-only audit trail: a Redis Stream (`{modelswap}:store:audit`) of every request, decision, stage
 * outcome, rollback, outcome, alert, recovery and config reload, with who and when. Entries are only ever added (XADD);
 * the stream is trimmed with `MAXLEN ~ audit.maxEntries`, which drops the oldest events only once the
 * stream holds more than that many (default 1,000,000). Every value is a string; details are passed
 * through the same secret redaction as Slack posts, because they can carry text from hosts.
 */
export class AuditLog {
  readonly maxEntries: number;
  private readonly secrets: readonly string[];
  private readonly log: Logger;

  constructor(
    private readonly redis: RedisClient,
    options: AuditLogOptions = {},
  ) {
    this.maxEntries = options.maxEntries ?? DEFAULT_AUDIT_MAX_ENTRIES;
    this.secrets = options.secrets ?? [];
    this.log = storeLog(options.log);
  }

  /** Appends one event; `at` defaults to now. Returns the stream id. Throws when Redis does. */
  async record(event: Omit<AuditEvent, "at"> & { at?: string }): Promise<string> {
    const id = await this.redis.xadd(AUDIT_STREAM, ...this.xaddArgs(event));
    return id ?? "";
  }

  /** Appends events with a swap's save (written atomically with its record: src/store/save-writes.ts). */
  inTransaction(tx: SaveWrites, events: readonly AuditEvent[]): void {
    for (const event of events) tx.xadd(AUDIT_STREAM, ...this.xaddArgs(event));
  }

  /** An event's stream fields (name, value, …), redacted and capped. */
  fields(event: Omit<AuditEvent, "at"> & { at?: string }): string[] {
    const clean: AuditEvent = { ...event, at: event.at ?? new Date().toISOString() };
    const args: string[] = [];
    for (const field of FIELDS) {
      const value = clean[field];
      if (value === undefined) continue;
      args.push(field, this.scrub(field, String(value)));
    }
    return args;
  }

  private xaddArgs(
    event: Omit<AuditEvent, "at"> & { at?: string },
  ): [string, string, string, string, ...string[]] {
    return ["MAXLEN", "~", String(this.maxEntries), "*", ...this.fields(event)];
  }

  /**
   * The newest events first, optionally only those of one host or one swap, at most `limit` of them.
   * Filtering walks the stream backwards in pages, so asking for an old swap's events costs a scan.
   */
  async read(query: { host?: string; swap?: string; limit: number }): Promise<AuditEntry[]> {
    const out: AuditEntry[] = [];
    if (query.limit <= 0) return out;
    let end = "+";
    for (;;) {
      const page = await this.redis.xrevrange(AUDIT_STREAM, end, "-", "COUNT", PAGE);
      for (const [id, values] of page) {
        const entry = this.toEntry(id, values);
        if (entry === undefined) continue;
        if (query.host !== undefined && entry.host !== query.host) continue;
        if (query.swap !== undefined && entry.swap !== query.swap) continue;
        out.push(entry);
        if (out.length >= query.limit) return out;
      }
      if (page.length < PAGE) return out;
      end = `(${page[page.length - 1]?.[0]}`;
    }
  }

  /** How many events the stream holds now. */
  async length(): Promise<number> {
    return await this.redis.xlen(AUDIT_STREAM);
  }

  private scrub(field: string, value: string): string {
    const flat = field === "detail" ? value : value.replace(/[\r\n]+/g, " ");
    const redacted = redactSecrets(flat, this.secrets);
    return redacted.length > MAX_DETAIL_CHARS ? `${redacted.slice(0, MAX_DETAIL_CHARS - 1)}…` : redacted;
  }

  /** A stream entry, parsed; one that does not (no kind, who or detail; a bad time) is reported and left out. */
  private toEntry(id: string, values: readonly string[]): AuditEntry | undefined {
    const fields: Record<string, string> = {};
    for (let i = 0; i + 1 < values.length; i += 2) fields[values[i] ?? ""] = values[i + 1] ?? "";
    const parsed = entrySchema.safeParse(fields);
    if (!parsed.success) {
      reportCorrupt(this.log, "audit entry", id, parsed.error);
      return undefined;
    }
    const { at, host, swap, stage, process: by, ...rest } = parsed.data;
    // every entry this version writes has `at`; the stream id's time stands in for one that has none
    const entry: AuditEntry = { id, at: at ?? new Date(Number(id.split("-")[0])).toISOString(), ...rest };
    if (host !== undefined) entry.host = host;
    if (swap !== undefined) entry.swap = swap;
    if (stage !== undefined) entry.stage = stage;
    if (by !== undefined) entry.process = by;
    return entry;
  }
}
