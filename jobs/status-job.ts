import type { HostConfig } from "../src/config/file-schema.ts";
import { hostEngineKind } from "../src/config/host-engines.ts";
import { engineFor } from "../src/engine/engines.ts";
import { asCodedError } from "../src/errors.ts";
import { escapeMrkdwn } from "../src/escape-mrkdwn.ts";
import { hostFrontDoor } from "../src/front-door/host-front-door.ts";
import type { HostRegistry } from "../src/host/host-registry.ts";
import { Semaphore } from "../src/host/semaphore.ts";
import type { Logger } from "../src/log.ts";
import type { StatusJob } from "../src/queue/command-queue.ts";
import {
  FLEET_TABLE_ROWS,
  type FleetRow,
  renderFleet,
  renderFleetPages,
  renderFleetSummary,
} from "../src/reporter/fleet-message.ts";
import { frontDoorLine } from "../src/reporter/front-door-line.ts";
import { stuckLockLine } from "../src/reporter/host-lock-message.ts";
import { renderHostStatus } from "../src/reporter/status-message.ts";
import { type SlackMessage, section } from "../src/slack/blocks.ts";
import type { SlackPoster } from "../src/slack/slack-poster.ts";
import { readHostSwaps } from "../src/status/host-swaps.ts";
import { monitorView } from "../src/status/monitor-view.ts";
import { type HostStatus, healthyStatus, type ProbeTarget, probeHost } from "../src/status/probe-host.ts";
import type { Store } from "../src/store/store.ts";
import { servingPortOf } from "../src/swap/unit-ports.ts";

export interface StatusJobDeps {
  hosts: HostRegistry<HostConfig>;
  poster: SlackPoster;
  store: Store;
  /** The state of a swap's BullMQ job (SwapQueue.jobState): tells a live swap from a stuck lock. */
  swapJobs: { jobState(swapId: string): Promise<string | undefined> };
  log: Logger;
  /**
   * How old the health monitor's last passed check of a host may be for a fleet summary to count the
   * host healthy from it, without probing it (two intervals and a check's time limit); unset, every host
   * is probed.
   */
  monitorFreshMs?: () => number;
}

/** Hosts probed at once by one `/llm status`: each probe is bounded by its command timeout. */
export const PROBES_AT_ONCE = 16;

/**
 * Probes the requested hosts, 16 at a time — each bounded by its command timeout, so an unreachable host
 * answers in time — and answers in the channel the command came from, to the person who asked alone (an
 * ephemeral: `status.visibility: private`, the default) or to everyone (`channel`, or `--share`): the
 * detailed view of one host (with the swap running there), or, for `/llm status` without a host, one
 * compact table of the fleet (`--all`: every host's line over as many messages as it takes). Past 25
 * hosts the answer is a summary, and a host the health monitor saw healthy within `monitorFreshMs` (and
 * that no swap holds) is counted from that check, not probed: the summary names only the others, and a
 * thousand hosts answer in the time their unhealthy few take. A lock whose swap can never run again is
 * shown as stuck, with the command that clears it; status clears nothing.
 */
export async function runStatusJob(job: StatusJob, deps: StatusJobDeps): Promise<FleetRow[] | undefined> {
  const { poster, store, log } = deps;
  // a bounded number at a time: a thousand hosts at once is a thousand SSH handshakes and shells at once
  const probes = new Semaphore(PROBES_AT_ONCE);
  const summary = job.fleet === true && job.all !== true && job.hosts.length > FLEET_TABLE_ROWS;
  const started = Date.now();
  const rows = await Promise.all(
    job.hosts.map(async (name): Promise<FleetRow> => {
      const swaps = await readHostSwaps(name, {
        store,
        jobState: (id) => deps.swapJobs.jobState(id),
        log,
      });
      // A summary counts the hosts the monitor has just seen healthy, and probes the rest: those it shows
      const seen =
        summary && swaps.lock !== undefined && swaps.lock.holder === undefined
          ? await seenHealthy(name, deps)
          : undefined;
      const status = seen ?? (await probes.run(() => probe(name, deps)));
      if (seen === undefined)
        log.info({ host: name, verdict: status.verdict, ms: status.durationMs }, "status probed");
      const { active, stuck, last } = swaps;
      return {
        status,
        ...(seen === undefined ? {} : { fromMonitor: true }),
        ...(stuck === undefined ? {} : { stuck: stuckLockLine(stuck) }),
        ...(active === undefined
          ? {}
          : { active: { id: active.id, step: active.step, repo: active.request.model.repo } }),
        ...(last?.outcome === undefined
          ? {}
          : { last: { outcome: last.outcome, repo: last.request.model.repo } }),
      };
    }),
  );
  if (job.fleet === true)
    log.info(
      {
        hosts: rows.length,
        probed: rows.filter((r) => r.fromMonitor !== true).length,
        ms: Date.now() - started,
      },
      "fleet status read",
    );
  // the CLI and the HTTP API: the rows are the answer (src/http/ops-api.ts), nothing is posted
  if (job.answer === "return") return rows;
  // An ephemeral can never be edited or found again later: each answer is one message, sent once.
  const answer = (msg: SlackMessage) =>
    job.answer === "private" ? poster.ephemeral(job.channel, job.user, msg) : poster.post(job.channel, msg);
  if (job.fleet === true) {
    if (job.all === true) {
      // in order: each part after the one before it
      for (const page of renderFleetPages(rows)) await answer(page);
    } else await answer(rows.length > FLEET_TABLE_ROWS ? renderFleetSummary(rows) : renderFleet(rows));
    return undefined;
  }
  await Promise.all(
    rows.map(async (row) => {
      const msg = renderHostStatus(row.status);
      const door = await frontDoorOf(row.status.host, deps);
      if (door !== undefined) msg.blocks.push(section(door));
      if (row.stuck !== undefined) msg.blocks.push(section(row.stuck));
      if (row.active !== undefined) {
        msg.blocks.push(
          section(
            `🔄 Swap \`${row.active.id}\` to \`${escapeMrkdwn(row.active.repo)}\` is at stage *${row.active.step}*.`,
          ),
        );
      }
      await answer(msg);
    }),
  );
  return undefined;
}

/** The host's front door line, when it has one (a read that fails says why, never fails the answer). */
async function frontDoorOf(name: string, { hosts }: StatusJobDeps): Promise<string | undefined> {
  const fd = hostFrontDoor(hosts.config(name), hosts.transport(name));
  if (fd === undefined) return undefined;
  try {
    return frontDoorLine(fd.door.backend, { servers: await fd.door.servers() }, fd.hold);
  } catch (error) {
    const coded = asCodedError(error);
    return frontDoorLine(fd.door.backend, { error: coded.message, code: coded.code });
  }
}

/**
 * The host as the health monitor last saw it, when that was a passed check within `monitorFreshMs` with
 * no failure since (the same question as a probe's: the unit's engine answers its health probe): a
 * healthy status dated by that check. Undefined when the monitor has no such check, or is not consulted.
 */
async function seenHealthy(name: string, deps: StatusJobDeps): Promise<HostStatus | undefined> {
  const { store } = deps;
  const freshMs = deps.monitorFreshMs?.();
  if (freshMs === undefined) return undefined;
  const health = await store.incidents.state(name).catch(() => undefined);
  if (health === undefined) return undefined;
  const seen = monitorView(health, Date.now(), freshMs);
  if (seen.verdict !== "healthy" || seen.checkedAt === undefined) return undefined;
  return healthyStatus(await probeTarget(name, deps), seen.checkedAt);
}

/** What a probe of the host asks about: the unit it serves now, on its port, with its engine. */
async function probeTarget(name: string, { hosts, store }: StatusJobDeps): Promise<ProbeTarget> {
  const host = hosts.config(name);
  // After a swap the host serves another unit than the config's first one.
  const serving = await store.hosts.serving(name);
  return {
    name,
    unit: serving?.unit ?? host.currentUnit,
    // a blue/green swap may have moved the serving unit to the standby slot's port
    port: servingPortOf(serving, host.servingPort),
    engine: engineFor(serving?.engine ?? hostEngineKind(host)),
  };
}

async function probe(name: string, deps: StatusJobDeps) {
  const host = deps.hosts.config(name);
  return await probeHost(
    deps.hosts.transport(name),
    await probeTarget(name, deps),
    host.commandTimeoutSeconds * 1000,
  );
}
