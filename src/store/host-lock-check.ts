import { asCodedError } from "../errors.ts";
import { swapIdTime } from "../grammar/swap-id.ts";
import type { SwapOutcome, SwapRecord } from "../swap/swap-record.ts";
import { type AuditEvent, SYSTEM_ACTOR } from "./audit-log.ts";
import type { Store } from "./store.ts";

/**
 * Whether the swap that holds a host lock can still run, and what to do with a lock whose swap cannot.
 *
 * Why a check and not a TTL: a swap is alive exactly as long as its BullMQ job is (waiting, delayed,
 * active), and only the job can make it advance and, at its final save, give the host back. A TTL would
 * have to be renewed by something: the worker advancing the swap renews nothing while every worker is
 * stopped (an upgrade, an outage), and a swap may wait for approval for hours with its job parked as
 * delayed. A lease that lapses then hands the host of a live swap — perhaps one between switch and
 * health — to the next request: two swaps on one host, the one failure the lock exists to prevent. So the
 * lock stays a plain key, and its holder is judged when it matters — when someone wants the host (a new
 * `/llm swap` or `/llm rollback`), asks about it (`/llm status`) or cancels — by asking BullMQ about
 * the holder's job. A lock is dead only when all of this holds:
 * - its swap's job is gone or ended (`completed`, `failed`, or none: the bot stopped before queueing it);
 * - no run holds the swap's lease (a worker ending a swap whose job has just failed holds it);
 * - the swap is older than QUEUEING_GRACE_MS (a request still between its lock and its enqueue, in
 *   another process, has no job yet for a few milliseconds; its id says when it was created).
 * A finished swap (outcome set) never holds a lock legitimately: its final save releases it.
 */
export const QUEUEING_GRACE_MS = 2 * 60_000;

/** BullMQ's states in which a job will still run (`getState()`); anything else will not. */
const LIVE_JOB_STATES: ReadonlySet<string> = new Set([
  "waiting",
  "delayed",
  "active",
  "prioritized",
  "waiting-children",
  "paused",
]);

export interface HostLockCheckDeps {
  store: Pick<Store, "locks" | "swaps" | "audit">;
  /** The BullMQ state of the swap's job, undefined when it has none (SwapQueue.jobState). */
  jobState(swapId: string): Promise<string | undefined>;
  now?: () => number;
}

/** Why a swap will never run again. */
export type DeadReason =
  /** The lock names a swap that has no record: the bot stopped between taking the lock and saving it. */
  | "no-record"
  /** A record and no job: the bot stopped between saving the swap and queueing its job. */
  | "no-job"
  /** Its job ended (completed or failed) and the swap did not: the worker stopped before its final save. */
  | "job-ended"
  /** The swap ended, and its lock was not given back with the final save. */
  | "finished";

export type SwapLiveness =
  | { alive: true; why: "job" | "lease" | "queueing" | "unreadable"; job?: string }
  | { alive: false; why: DeadReason; job?: string };

/** A host's lock and who holds it. */
export type HostLock = { host: string; holder: undefined } | HeldLock;

export interface HeldLock {
  host: string;
  holder: string;
  /** The holder's record (undefined: none, or it could not be read: then `liveness.why` is "unreadable"). */
  record: SwapRecord | undefined;
  /** When the holder was requested (ISO). */
  since: string;
  liveness: SwapLiveness;
  /** The switch had begun: the host may serve neither model now. */
  touched: boolean;
}

/** Whether swap `id` (with its record, if it has one) can still run. */
export async function swapLiveness(
  id: string,
  record: SwapRecord | undefined,
  deps: HostLockCheckDeps,
): Promise<SwapLiveness> {
  if (record?.outcome !== undefined) return { alive: false, why: "finished" };
  const job = await deps.jobState(id);
  const known = job === undefined ? {} : { job };
  if (job !== undefined && LIVE_JOB_STATES.has(job)) return { alive: true, why: "job", job };
  if (await deps.store.locks.leaseHeld(id)) return { alive: true, why: "lease", ...known };
  const created = swapIdTime(id) ?? (record === undefined ? undefined : Date.parse(record.createdAt));
  const now = (deps.now ?? Date.now)();
  if (created === undefined || now - created < QUEUEING_GRACE_MS)
    return { alive: true, why: "queueing", ...known };
  if (record === undefined) return { alive: false, why: "no-record", ...known };
  return { alive: false, why: job === undefined ? "no-job" : "job-ended", ...known };
}

/** The host's lock, its holder and whether that holder can still run. Reads only: it clears nothing. */
export async function checkHostLock(host: string, deps: HostLockCheckDeps): Promise<HostLock> {
  const holder = await deps.store.locks.hostHolder(host);
  if (holder === undefined) return { host, holder };
  let record: SwapRecord | undefined;
  let unreadable = false;
  try {
    record = await deps.store.swaps.get(holder);
  } catch {
    unreadable = true; // STORE_RECORD_INVALID: never judged dead on a record nobody can read
  }
  const created = swapIdTime(holder);
  const since = record?.createdAt ?? new Date(created ?? 0).toISOString();
  let liveness: SwapLiveness = unreadable
    ? { alive: true, why: "unreadable" }
    : await swapLiveness(holder, record, deps);
  // judged dead on a record read before its job and lease were: a run may have ended the swap between
  // (its final save comes before its lease goes and its job completes), and its record says so now
  if (!liveness.alive && record !== undefined && record.outcome === undefined) {
    const now = await deps.store.swaps.get(holder).catch(() => record);
    if (now?.outcome !== undefined) {
      record = now;
      liveness = { alive: false, why: "finished" };
    }
  }
  return { host, holder, record, since, liveness, touched: record?.switch !== undefined };
}

/** A lock whose swap will never run again: the holder is neither queued, running, nor being ended. */
export function isStuck(lock: HostLock): lock is HeldLock & { liveness: { alive: false } } {
  return lock.holder !== undefined && !lock.liveness.alive;
}

/**
 * Clears a stuck lock and ends its swap, in one write: the record gets `outcome` (with `reason`, the
 * stages that were running skipped), its audit entries (a `cancel` by `by` when a person asked, and the
 * `outcome`) and a `finished` event for its thread, and the lock goes. The lock was judged from reads
 * made a moment before; Redis checks again, in the script that writes (src/store/save-writes.ts), that
 * the swap still holds the host, that no run holds its lease and that it has not ended: a run that ended
 * it meanwhile keeps its outcome (its thread already said it), and one that took it up ends it itself.
 * A holder without a record only loses the lock (and the audit stream says who cleared it). Returns
 * false when the lock was no longer that swap's to clear.
 */
export async function clearStuckLock(
  lock: HeldLock,
  { by, outcome, reason }: { by: string; outcome: SwapOutcome; reason: string },
  deps: HostLockCheckDeps,
): Promise<boolean> {
  const { store } = deps;
  const at = new Date((deps.now ?? Date.now)()).toISOString();
  const { host, holder, record } = lock;
  const cancel: AuditEvent = { at, kind: "cancel", who: by, host, swap: holder, detail: reason };
  if (record === undefined || record.outcome !== undefined) {
    const cleared = await store.locks.unlockHost(host, holder);
    if (cleared) await store.audit.record(cancel);
    return cleared;
  }
  const stages = structuredClone(record.stages);
  for (const stage of Object.values(stages)) {
    if (stage.state === "running") Object.assign(stage, { state: "skipped", finishedAt: at });
  }
  Object.assign(stages.finish, { state: "failed", finishedAt: at, detail: outcome.replace("_", " ") });
  const audit: AuditEvent[] = by === SYSTEM_ACTOR ? [] : [cancel];
  audit.push({
    at,
    kind: "outcome",
    who: SYSTEM_ACTOR,
    host,
    swap: holder,
    detail: `${outcome}: ${record.request.model.repo} — ${reason}`,
  });
  try {
    await store.swaps.save(
      {
        ...record,
        stages,
        outcome,
        step: "done",
        finishedAt: at,
        reason,
        ...(by === SYSTEM_ACTOR ? {} : { cancel: { by, at } }),
      },
      {
        events: [{ type: "finished", outcome, at }],
        audit,
        also: (tx) => store.locks.unlockHostInTransaction(tx, host, holder),
        when: { stuck: true },
      },
    );
  } catch (error) {
    // ended meanwhile, taken up by a run, or the host is another swap's now: nothing was written
    const code = asCodedError(error).code;
    if (code === "SWAP_ENDED" || code === "SWAP_SUPERSEDED") return false;
    throw error;
  }
  return true;
}
