/*
 * What the audit stream records: the kinds of event, who acted, and one event's fields. The store writes
 * them (src/store/audit-log.ts); the Slack layer, the pipeline and the monitor make them.
 */

/**
 * What happened. Swap events come from the bot and the pipeline; alerts and recoveries from the health
 * monitor; `config` from each process that reloads its config file (or refuses to); `gc` from each deleting
 * run of disk retention (src/retention/).
 */
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
  "config",
  "gc",
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
  /**
   * For `config` events: the process that acted, `<role>@<machine>:<pid>` (role `bot`, `worker` or
   * `bot+worker`): each process reloads, and records, for itself.
   */
  process?: string;
}
