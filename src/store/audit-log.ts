import type { ChainableCommander, Redis } from "ioredis";
import { redactSecrets } from "../log.ts";
import { keys } from "./keys.ts";

/** The audit stream's key, under the deployment's hash tag (same Redis Cluster slot as everything else). */
export const AUDIT_STREAM = keys.audit;

/** Default retention: about a million events — tens of thousands of swaps — so nothing is lost in practice. */
export const DEFAULT_AUDIT_MAX_ENTRIES = 1_000_000;

/** What happened. Swap events come from the bot and the pipeline; alerts and recoveries from the health monitor. */
export const AUDIT_KINDS = [
  "request",
  "approval",
  "rejection",
  "expiry",
  "cancel",
  "stage",
  "rollback",
  "outcome",
  "alert",
  "recovery",
] as const;
export type AuditKind = (typeof AUDIT_KINDS)[number];

/** Who acts when no person does (the pipeline, the health monitor). */
export const SYSTEM_ACTOR = "modelswap";

export interface AuditEvent {
  /** ISO 8601 time of the event. */
  at: string;
  kind: AuditKind;
  /** A Slack user id (U…/W…) for people, `modelswap` for the bot itself. */
  who: string;
  host?: string;
  /** The swap's id, for swap events. */
  swap?: string;
  /** For `stage` events: which stage (resolve, download, switch, …). */
  stage?: string;
  /** One line for people: the model, the stage's result, the reason. Redacted and capped. */
  detail: string;
}

/** An event as read back, with its stream id (`<ms>-<seq>`, unique and ordered). */
export interface AuditEntry extends AuditEvent {
  id: string;
}

export interface AuditLogOptions {
  /** `audit.maxEntries`: the stream is trimmed (approximately) to this many newest events. */
  maxEntries?: number;
  /** Secret values (tokens) that must never be stored: replaced by `[redacted]`, as in Slack posts. */
  secrets?: readonly string[];
}

/** The longest detail kept; more is cut with a mark (an event is one line, not a log). */
export const MAX_DETAIL_CHARS = 2000;

const FIELDS = ["at", "kind", "who", "host", "swap", "stage", "detail"] as const;
const PAGE = 500;

/**
 * The append-only audit trail: a Redis Stream (`{modelswap}:audit`) of every request, decision, stage
 * outcome, rollback, outcome, alert and recovery, with who and when. Entries are only ever added (XADD);
 * the stream is trimmed with `MAXLEN ~ audit.maxEntries`, which drops the oldest events only once the
 * stream holds more than that many (default 1,000,000). Every value is a string; details are passed
 * through the same secret redaction as Slack posts, because they can carry text from hosts.
 */
export class AuditLog {
  readonly maxEntries: number;
  private readonly secrets: readonly string[];

  constructor(
    private readonly redis: Redis,
    options: AuditLogOptions = {},
  ) {
    this.maxEntries = options.maxEntries ?? DEFAULT_AUDIT_MAX_ENTRIES;
    this.secrets = options.secrets ?? [];
  }

  /** Appends one event; `at` defaults to now. Returns the stream id. Throws when Redis does. */
  async record(event: Omit<AuditEvent, "at"> & { at?: string }): Promise<string> {
    const id = await this.redis.xadd(AUDIT_STREAM, ...this.xaddArgs(event));
    return id ?? "";
  }

  /** Appends events inside a MULTI (a swap's save writes its events in the same transaction as its record). */
  inTransaction(tx: ChainableCommander, events: readonly AuditEvent[]): void {
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
        const entry = toEntry(id, values);
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
}

function toEntry(id: string, values: readonly string[]): AuditEntry | undefined {
  const map = new Map<string, string>();
  for (let i = 0; i + 1 < values.length; i += 2) map.set(values[i] ?? "", values[i + 1] ?? "");
  const kind = map.get("kind");
  // Kinds a later version adds are kept as they are: an audit trail hides nothing.
  if (kind === undefined) return undefined;
  const entry: AuditEntry = {
    id,
    at: map.get("at") ?? new Date(Number(id.split("-")[0])).toISOString(),
    kind: kind as AuditKind,
    who: map.get("who") ?? "",
    detail: map.get("detail") ?? "",
  };
  for (const field of ["host", "swap", "stage"] as const) {
    const value = map.get(field);
    if (value !== undefined) entry[field] = value;
  }
  return entry;
}
