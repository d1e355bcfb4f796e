import { z } from "zod";
import type { Logger } from "../log.ts";
import type { RedisClient } from "../redis/redis-client.ts";
import { reportCorrupt, storeLog } from "./corrupt-value.ts";
import { incidentRuleScript } from "./incident-rule.ts";
import { keys } from "./keys.ts";

/** An open incident: the host failed `failureThreshold` checks in a row and has not recovered since. */
export interface Incident {
  /** When the first failed check of the streak that opened it ran. */
  since: Date;
  /** What that first check saw. */
  firstFailure: string;
  /** What the latest failed check saw. */
  lastFailure: string;
  /** The alert's message ts, once it was posted (the recovery is a reply in its thread). */
  alertTs?: string;
  /** The model named in the alert (repeated in the recovery). */
  model?: string;
  /** For a recovered incident: when the first of the passed checks that closed it ran. */
  healthySince?: Date;
}

/** A host's health as the monitor last recorded it (read by tests, `/llm status` could show it too). */
export interface HostHealthState {
  /** Consecutive failed checks (reset by a pass or by a swap's switch). */
  failures: number;
  /** Consecutive passed checks (reset by a failure). */
  passes: number;
  lastCheck: Date | undefined;
  lastResult: "pass" | "fail" | "suppressed" | undefined;
  lastDetail: string | undefined;
  incident: Incident | undefined;
  /** Alerts and recoveries posted for this host since it was first checked (counters for /metrics). */
  alertsPosted: number;
  recoveriesPosted: number;
}

/**
 * What one recorded check changed. Only the check that crosses a threshold gets `alert` or `recovered`:
 * the transition is one atomic Redis script, so however many workers check, one alert and one recovery
 * are posted per incident.
 */
export type Transition =
  | { kind: "healthy" }
  | { kind: "failing"; failures: number }
  | { kind: "alert"; failures: number; incident: Incident }
  | { kind: "still-down"; incident: Incident }
  | { kind: "recovering"; passes: number; incident: Incident }
  | { kind: "recovered"; incident: Incident };

export interface Thresholds {
  /** Consecutive failures that open an incident (and post its one alert). */
  failureThreshold: number;
  /** Consecutive passes that close it (and post its one recovery). */
  recoveryThreshold: number;
  /**
   * An alert claimed but never marked posted (its worker died, or Slack refused it) is claimed again by a
   * failing check after this long, so an incident is never silently lost.
   */
  claimTimeoutMs: number;
}

const hostKey = keys.health;
const checkingKey = keys.healthCheck;

/**
 * Upper bounds (seconds) of the check-lateness histogram: how long after its scheduled moment a check
 * started. A check on time is late by a few ms; one a busy worker picked up late shows here long before a
 * host goes unchecked for a whole interval.
 */
export const LATENESS_BUCKETS: readonly number[] = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** The fleet's check lateness as the scripts counted it (read by /metrics and the bench). */
export interface CheckLateness {
  /** Checks per bucket (not cumulative), by upper bound as LATENESS_BUCKETS has it, `+Inf` above the last. */
  counts: ReadonlyMap<string, number>;
  count: number;
  sumSeconds: number;
  /** The latest of them all, since the counts were last cleared. */
  maxSeconds: number;
}

/** KEYS[1] the host's hash. ARGV: now (ms), detail. A swap is switching the host: its checks do not count. */
const SUPPRESS = `
redis.call('hset', KEYS[1], 'failures', 0, 'passes', 0, 'lastCheck', ARGV[1], 'lastResult', 'suppressed', 'lastDetail', ARGV[2])
redis.call('hdel', KEYS[1], 'streakSince', 'streakFirst')
return 1
`;

/** KEYS[1] the host's hash. ARGV: the incident's since (ms), field, value: set only on that same incident. */
const SET_ON_INCIDENT = `
if redis.call('hget', KEYS[1], 'incSince') ~= ARGV[1] then return 0 end
if ARGV[2] == 'incClaimedAt' and ARGV[3] == '' then redis.call('hdel', KEYS[1], 'incClaimedAt') return 1 end
redis.call('hset', KEYS[1], ARGV[2], ARGV[3])
return 1
`;

const RELEASE =
  "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

/** A counter the scripts keep (HINCRBY): a whole number. */
const count = z
  .string()
  .regex(/^\d{1,15}$/, "not a count")
  .transform(Number);
/** A time the scripts keep: Unix milliseconds. */
const epochMs = z
  .string()
  .regex(/^\d{1,15}$/, "not a time in ms")
  .transform((t) => new Date(Number(t)));

/**
 * The host's hash as state() reads it (the scripts' own working fields, streakSince, passSince and
 * incClaimedAt, are theirs alone). Every field may be missing: a host not checked yet has none.
 */
const healthHashSchema = z.object({
  failures: count.optional(),
  passes: count.optional(),
  lastCheck: epochMs.optional(),
  lastResult: z.enum(["pass", "fail", "suppressed"]).optional(),
  lastDetail: z.string().optional(),
  incSince: epochMs.optional(),
  incFirst: z.string().optional(),
  incLast: z.string().optional(),
  incAlertTs: z.string().optional(),
  incModel: z.string().optional(),
  alertsPosted: count.optional(),
  recoveriesPosted: count.optional(),
});
type HealthHash = z.infer<typeof healthHashSchema>;

/**
 * Per-host health state in Redis (one hash per host under the deployment's hash tag): consecutive
 * failures and passes, and the open incident. It survives restarts and is shared by every worker; each
 * change is one Lua script, so two workers never both see "threshold reached" for one incident.
 */
export class IncidentTracker {
  private readonly log: Logger;

  constructor(
    private readonly redis: RedisClient,
    private thresholds: Thresholds,
    log?: Logger,
  ) {
    this.log = storeLog(log);
  }

  /** The thresholds of the checks recorded from now on (a reloaded config's `health:`). */
  setThresholds(thresholds: Thresholds): void {
    this.thresholds = thresholds;
  }

  /**
   * Records one check's outcome and says what changed. `lateMs`: how long after its scheduled moment the
   * check started, counted in the fleet's lateness histogram (left out for a check run off schedule).
   */
  async record(
    host: string,
    check: { ok: boolean; detail: string },
    now = Date.now(),
    lateMs?: number,
  ): Promise<Transition> {
    const { failureThreshold, recoveryThreshold, claimTimeoutMs } = this.thresholds;
    const late = lateMs === undefined ? undefined : Math.max(0, Math.round(lateMs));
    const reply = (await this.redis.eval(
      incidentRuleScript(),
      2,
      hostKey(host),
      keys.monitorLateness,
      check.ok ? "pass" : "fail",
      String(now),
      check.detail,
      String(failureThreshold),
      String(recoveryThreshold),
      String(claimTimeoutMs),
      late === undefined ? "" : String(late),
      late === undefined ? "" : latenessBound(late / 1000),
    )) as string[];
    const [kind, count = "0", since = "", first = "", last = "", alertTs = "", model = "", passSince = ""] =
      reply;
    const n = Number(count);
    const incident: Incident = {
      since: new Date(Number(since) || now),
      firstFailure: first,
      lastFailure: last,
      ...(alertTs === "" ? {} : { alertTs }),
      ...(model === "" ? {} : { model }),
      ...(kind === "recovered" && passSince !== "" ? { healthySince: new Date(Number(passSince)) } : {}),
    };
    switch (kind) {
      case "failing":
        return { kind, failures: n };
      case "alert":
        return { kind, failures: n, incident };
      case "still-down":
        return { kind, incident };
      case "recovering":
        return { kind, passes: n, incident };
      case "recovered":
        return { kind, incident };
      default:
        return { kind: "healthy" };
    }
  }

  /** A swap is between switch and finish on the host: the check is skipped and the streak starts over. */
  async suppress(host: string, detail: string, now = Date.now()): Promise<void> {
    await this.redis.eval(SUPPRESS, 1, hostKey(host), String(now), detail);
  }

  /** The alert of this incident was posted: keep its ts (for the recovery's thread) and the model it named. */
  async alertPosted(host: string, incident: Incident, ts: string, model: string | undefined): Promise<void> {
    const since = String(incident.since.getTime());
    await this.redis.hincrby(hostKey(host), "alertsPosted", 1);
    await this.redis.eval(SET_ON_INCIDENT, 1, hostKey(host), since, "incAlertTs", ts);
    if (model !== undefined)
      await this.redis.eval(SET_ON_INCIDENT, 1, hostKey(host), since, "incModel", model);
  }

  /** The recovery of an incident was posted (counted for /metrics). */
  async recoveryPosted(host: string): Promise<void> {
    await this.redis.hincrby(hostKey(host), "recoveriesPosted", 1);
  }

  /** Posting the alert failed: the next failing check claims it again. */
  async alertFailed(host: string, incident: Incident): Promise<void> {
    await this.redis.eval(
      SET_ON_INCIDENT,
      1,
      hostKey(host),
      String(incident.since.getTime()),
      "incClaimedAt",
      "",
    );
  }

  /**
   * The host's health as last recorded, parsed: a field that does not parse (changed by hand) is
   * reported (STORE_RECORD_INVALID) and read as missing, the others are still used.
   */
  async state(host: string): Promise<HostHealthState> {
    const h = this.parseHash(host, await this.redis.hgetall(hostKey(host)));
    const incident: Incident | undefined =
      h.incSince === undefined
        ? undefined
        : {
            since: h.incSince,
            firstFailure: h.incFirst ?? "",
            lastFailure: h.incLast ?? "",
            ...(h.incAlertTs === undefined ? {} : { alertTs: h.incAlertTs }),
            ...(h.incModel === undefined ? {} : { model: h.incModel }),
          };
    return {
      failures: h.failures ?? 0,
      passes: h.passes ?? 0,
      lastCheck: h.lastCheck,
      lastResult: h.lastResult,
      lastDetail: h.lastDetail,
      incident,
      alertsPosted: h.alertsPosted ?? 0,
      recoveriesPosted: h.recoveriesPosted ?? 0,
    };
  }

  private parseHash(host: string, raw: Record<string, string>): HealthHash {
    const parsed = healthHashSchema.safeParse(raw);
    if (parsed.success) return parsed.data;
    reportCorrupt(this.log, "health state of host", host, parsed.error);
    const bad = new Set(parsed.error.issues.map((i) => String(i.path[0])));
    const kept = Object.fromEntries(Object.entries(raw).filter(([field]) => !bad.has(field)));
    // what is left parses: every field is optional and each bad one is gone
    return healthHashSchema.parse(kept);
  }

  /**
   * Takes the host's check slot for this long, so a check never overlaps another check of the same host
   * (a slow host, several workers); false when one is running.
   */
  async beginCheck(host: string, token: string, ttlMs: number): Promise<boolean> {
    return (await this.redis.set(checkingKey(host), token, "PX", Math.ceil(ttlMs), "NX")) === "OK";
  }

  async endCheck(host: string, token: string): Promise<void> {
    await this.redis.eval(RELEASE, 1, checkingKey(host), token);
  }

  /** Drops everything about a host that left the config. */
  async forget(host: string): Promise<void> {
    await this.redis.del(hostKey(host), checkingKey(host));
  }
}

/** The bucket a lateness (seconds) falls in: its upper bound as the histogram names it. */
export function latenessBound(seconds: number): string {
  const bound = LATENESS_BUCKETS.find((b) => seconds <= b);
  return bound === undefined ? "+Inf" : String(bound);
}

/** The fleet's lateness histogram; a field that does not parse is left out (it was changed by hand). */
export async function readLateness(redis: Pick<RedisClient, "hgetall">): Promise<CheckLateness> {
  const raw = await redis.hgetall(keys.monitorLateness);
  const number = (value: string | undefined) => {
    const n = Number(value);
    return value !== undefined && Number.isFinite(n) && n >= 0 ? n : 0;
  };
  const counts = new Map<string, number>();
  for (const [field, value] of Object.entries(raw))
    if (field.startsWith("le:")) counts.set(field.slice(3), number(value));
  return {
    counts,
    count: number(raw.count),
    sumSeconds: number(raw.sumMs) / 1000,
    maxSeconds: number(raw.maxMs) / 1000,
  };
}
