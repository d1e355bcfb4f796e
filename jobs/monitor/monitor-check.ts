import { type Clock, systemClock } from "../../src/clock.ts";
import type { HostConfig } from "../../src/config/file-schema.ts";
import { hostEngineKind } from "../../src/config/host-engines.ts";
import type { ConfigSource } from "../../src/config/live-config.ts";
import { engineFor } from "../../src/engine/engines.ts";
import { describeError } from "../../src/errors.ts";
import type { HostRegistry } from "../../src/host/host-registry.ts";
import type { Logger } from "../../src/log.ts";
import { formatOutage, renderAlert, renderRecovery } from "../../src/reporter/alert-message.ts";
import type { SlackPoster } from "../../src/slack/slack-poster.ts";
import { type AuditLog, SYSTEM_ACTOR } from "../../src/store/audit-log.ts";
import type { IncidentTracker, Transition } from "../../src/store/incidents.ts";
import type { Store } from "../../src/store/store.ts";
import { servingPortOf } from "../../src/swap/unit-ports.ts";
import { checkHealth, type HealthCheckResult } from "./health-check.ts";
import { readIncidentFacts } from "./incident-facts.ts";

export interface MonitorCheckDeps {
  /** Read at each check: a reload applies from the next one. */
  config: ConfigSource;
  hosts: HostRegistry<HostConfig>;
  store: Pick<Store, "swaps" | "locks" | "hosts">;
  poster: SlackPoster;
  tracker: IncidentTracker;
  /** The audit stream: every alert and recovery is recorded there. */
  audit?: Pick<AuditLog, "record"> | undefined;
  log: Logger;
  /** The monitor's time (checks are stamped with it); the system clock unless a test moves its own. */
  clock?: Clock;
}

/** Consecutive passes that close an incident when the config does not say. */
export const DEFAULT_RECOVERY_THRESHOLD = 2;

/** What one scheduled check did (returned as the job's result, handy in logs and tests). */
export type MonitorCheckOutcome =
  | { ran: false; why: "busy" | "switching" | "unknown-host" }
  | { ran: true; ok: boolean; transition: Transition["kind"] };

/**
 * One scheduled health check of one host: skipped while a swap is switching the host (the swap reports
 * for itself) or while another check of the host runs; otherwise check, record (with how late it started
 * against `dueAt`), and post the alert or the recovery when this check crossed a threshold.
 */
export async function runMonitorCheck(
  host: string,
  token: string,
  deps: MonitorCheckDeps,
  /** When the schedule wanted this check (Unix ms); its lateness is counted in the fleet's histogram. */
  dueAt?: number,
): Promise<MonitorCheckOutcome> {
  const { hosts, store, tracker } = deps;
  const config = deps.config.current();
  // BullMQ schedules by the real clock, whatever clock the checks are stamped with
  const startedAt = Date.now();
  if (!hosts.names().includes(host)) return { ran: false, why: "unknown-host" };
  const health = config.file.health;
  const hostConfig = hosts.config(host);
  const log = deps.log.child({ host });
  // the slot outlives any check: curl's limit plus the transport's margin, plus the alert's reads
  const slotMs = (health.checkTimeoutSeconds + 10) * 1000 + hostConfig.commandTimeoutSeconds * 1000;
  if (!(await tracker.beginCheck(host, token, slotMs))) return { ran: false, why: "busy" };
  const suppressed = async (): Promise<MonitorCheckOutcome | undefined> => {
    const swap = await switchingSwap(store, host);
    if (swap === undefined) return undefined;
    await tracker.suppress(host, `swap ${swap} is switching the host`);
    log.debug({ swap }, "health check skipped: a swap is switching the host");
    return { ran: false, why: "switching" };
  };
  try {
    const before = await suppressed();
    if (before !== undefined) return before;
    const serving = await store.hosts.serving(host);
    const unit = serving?.unit ?? hostConfig.currentUnit;
    const result = await checkHealth(
      // a line on a shell kept open, not a new SSH session and shell per check (src/host/kept-shell.ts)
      hosts.keptShell(host),
      // a blue/green swap may have moved the serving unit to the standby slot's port
      {
        unit,
        port: servingPortOf(serving, hostConfig.servingPort),
        engine: engineFor(serving?.engine ?? hostEngineKind(hostConfig)),
      },
      health.checkTimeoutSeconds,
      deps.clock,
    );
    // a swap that began switching while this check ran is what the check saw: it does not count
    const after = await suppressed();
    if (after !== undefined) return after;
    const transition = await tracker.record(
      host,
      { ok: result.ok, detail: result.failure ?? "healthy" },
      result.checkedAt.getTime(),
      dueAt === undefined ? undefined : startedAt - dueAt,
    );
    log.debug(
      {
        ok: result.ok,
        failure: result.failure,
        transition: transition.kind,
        ...(dueAt === undefined ? {} : { lateMs: startedAt - dueAt }),
        ms: Date.now() - startedAt,
      },
      "health checked",
    );
    if (transition.kind === "alert") {
      await postAlert(
        host,
        unit,
        serving?.repo,
        transition,
        result.failure ?? "",
        deps,
        log,
        result.unreachable,
      );
    } else if (transition.kind === "recovered") {
      await postRecovery(host, unit, serving?.repo, transition, deps, log);
    }
    return { ran: true, ok: result.ok, transition: transition.kind };
  } finally {
    await tracker.endCheck(host, token);
  }
}

/** The swap that holds the host and is between switch and finish, if any. */
async function switchingSwap(store: MonitorCheckDeps["store"], host: string): Promise<string | undefined> {
  const holder = await store.locks.hostHolder(host);
  if (holder === undefined) return undefined;
  const swap = await store.swaps.get(holder).catch(() => undefined);
  return swap?.switch !== undefined && swap.outcome === undefined ? holder : undefined;
}

async function postAlert(
  host: string,
  unit: string,
  servingRepo: string | undefined,
  transition: Extract<Transition, { kind: "alert" }>,
  failingCheck: string,
  deps: MonitorCheckDeps,
  log: Logger,
  unreachable?: HealthCheckResult["unreachable"],
): Promise<void> {
  const { hosts, poster, tracker } = deps;
  const config = deps.config.current();
  const { incident } = transition;
  // a host the bot cannot reach has no journal or nvidia-smi to read: asking again would only repeat the error
  const facts =
    unreachable === undefined
      ? await readIncidentFacts(hosts.transport(host), unit, hosts.config(host).commandTimeoutSeconds * 1000)
      : { journalTail: [], journalProblem: undefined, gpus: [], gpuProblem: undefined, unitModel: undefined };
  const model = servingRepo ?? facts.unitModel;
  const alert = renderAlert({
    host,
    model,
    unit,
    since: incident.since,
    failures: transition.failures,
    failingCheck,
    firstFailure: incident.firstFailure,
    journalTail: facts.journalTail,
    journalProblem: facts.journalProblem,
    gpus: facts.gpus,
    gpuProblem: facts.gpuProblem,
    intervalSeconds: config.file.health.intervalSeconds,
    recoveryThreshold: config.file.health.recoveryThreshold ?? DEFAULT_RECOVERY_THRESHOLD,
    ...(unreachable === undefined ? {} : { unreachable }),
  });
  let ts: string;
  try {
    ts = await poster.post(config.file.slack.channel, alert);
  } catch (error) {
    // the next failing check claims the alert again
    await tracker.alertFailed(host, incident);
    log.error(
      { err: describeError(error) },
      "could not post the health alert; the next failed check retries",
    );
    return;
  }
  await tracker.alertPosted(host, incident, ts, model);
  log.warn({ since: incident.since, failingCheck, ts }, "health alert posted");
  await audit(deps, log, {
    kind: "alert",
    host,
    detail: `${host} ${unreachable === undefined ? "is not serving" : unreachable.code === "HOST_KEY_MISMATCH" ? "presented a changed SSH host key" : "is unreachable from modelswap"}${model === undefined ? "" : ` ${model}`} (${unit}) since ${incident.since.toISOString()}: ${failingCheck}`,
  });
}

async function postRecovery(
  host: string,
  unit: string,
  servingRepo: string | undefined,
  transition: Extract<Transition, { kind: "recovered" }>,
  deps: MonitorCheckDeps,
  log: Logger,
): Promise<void> {
  const { poster } = deps;
  const config = deps.config.current();
  const { incident } = transition;
  // the outage ends with the first of the passed checks that closed the incident
  const recoveredAt = incident.healthySince ?? new Date((deps.clock ?? systemClock).now());
  const outage = formatOutage(recoveredAt.getTime() - incident.since.getTime());
  if (incident.alertTs === undefined) {
    // the alert never went out (Slack refused it each time): nobody waits for a recovery
    log.warn({ since: incident.since, outage }, "host recovered before its alert could be posted");
    return;
  }
  const recovery = renderRecovery({
    host,
    model: servingRepo ?? incident.model,
    unit,
    since: incident.since,
    recoveredAt,
  });
  try {
    // one message, shown in the alert's thread and in the channel
    await poster.post(config.file.slack.channel, recovery, { threadTs: incident.alertTs, broadcast: true });
  } catch (error) {
    log.error({ err: describeError(error) }, "could not post the recovery message");
    return;
  }
  await deps.tracker.recoveryPosted(host);
  log.info({ since: incident.since, outage }, "host recovered");
  await audit(deps, log, {
    kind: "recovery",
    host,
    detail: `${host} is serving again (${unit}) after an outage of ${outage}, down since ${incident.since.toISOString()}`,
  });
}

/** The monitor's one audit call site. */
async function audit(
  deps: MonitorCheckDeps,
  log: Logger,
  event: { kind: "alert" | "recovery"; host: string; detail: string },
): Promise<void> {
  if (deps.audit === undefined) return;
  try {
    await deps.audit.record({ ...event, who: SYSTEM_ACTOR });
  } catch (error) {
    log.error({ err: describeError(error), event: event.kind }, "could not write the audit event");
  }
}
