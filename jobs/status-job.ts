import { engineFor } from "../src/engine/engines.ts";
import { asCodedError, describeError } from "../src/errors.ts";
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
import { escapeMrkdwn, type SlackMessage, section } from "../src/reporter/message.ts";
import { renderHostStatus } from "../src/reporter/status-message.ts";
import type { SlackPoster } from "../src/slack/slack-poster.ts";
import { probeHost } from "../src/status/probe-host.ts";
import { checkHostLock, isStuck } from "../src/store/host-lock-check.ts";
import type { Store } from "../src/store/store.ts";
import { servingPortOf } from "../src/swap/unit-ports.ts";

export interface StatusJobDeps {
  hosts: HostRegistry;
  poster: SlackPoster;
  store: Store;
  /** The state of a swap's BullMQ job (SwapQueue.jobState): tells a live swap from a stuck lock. */
  swapJobs: { jobState(swapId: string): Promise<string | undefined> };
  log: Logger;
}

/** Hosts probed at once by one `/llm status`: each probe is bounded by its command timeout. */
export const PROBES_AT_ONCE = 16;

/**
 * Probes the requested hosts, 16 at a time — each bounded by its command timeout, so an unreachable host
 * answers in time — and answers in the channel the command came from, to the person who asked alone (an
 * ephemeral: `status.visibility: private`, the default) or to everyone (`channel`, or `--share`): the
 * detailed view of one host (with the swap running there), or, for `/llm status` without a host, one
 * compact table of the fleet. A lock
 * whose swap can never run again is shown as stuck, with the command that clears it; status clears nothing.
 */
export async function runStatusJob(job: StatusJob, deps: StatusJobDeps): Promise<void> {
  const { poster, store, log } = deps;
  // a bounded number at a time: a thousand hosts at once is a thousand SSH handshakes and shells at once
  const probes = new Semaphore(PROBES_AT_ONCE);
  const rows = await Promise.all(
    job.hosts.map(async (name): Promise<FleetRow> => {
      const status = await probes.run(() => probe(name, deps));
      log.info({ host: name, verdict: status.verdict, ms: status.durationMs }, "status probed");
      const lock = await checkHostLock(name, {
        store,
        jobState: (id) => deps.swapJobs.jobState(id),
      }).catch((error: unknown) => {
        log.warn({ host: name, err: describeError(error) }, "could not check the host lock");
        return undefined;
      });
      const running = lock?.holder === undefined ? undefined : lock.record;
      const [last] = (await store.swaps.history({ host: name, limit: 5 })).records.filter(
        (r) => r.outcome !== undefined,
      );
      return {
        status,
        ...(lock !== undefined && isStuck(lock) ? { stuck: stuckLockLine(lock) } : {}),
        ...(running === undefined || running.outcome !== undefined || (lock !== undefined && isStuck(lock))
          ? {}
          : { active: { id: running.id, step: running.step, repo: running.request.model.repo } }),
        ...(last?.outcome === undefined
          ? {}
          : { last: { outcome: last.outcome, repo: last.request.model.repo } }),
      };
    }),
  );
  // An ephemeral can never be edited or found again later: each answer is one message, sent once.
  const answer = (msg: SlackMessage) =>
    job.answer === "private" ? poster.ephemeral(job.channel, job.user, msg) : poster.post(job.channel, msg);
  if (job.fleet === true) {
    if (job.all === true) {
      // in order: each part after the one before it
      for (const page of renderFleetPages(rows)) await answer(page);
    } else await answer(rows.length > FLEET_TABLE_ROWS ? renderFleetSummary(rows) : renderFleet(rows));
    return;
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
}

/** The host's front door line, when it has one (a read that fails says why, never fails the answer). */
async function frontDoorOf(name: string, { hosts }: StatusJobDeps): Promise<string | undefined> {
  const fd = hostFrontDoor(hosts.config(name), hosts.transport(name));
  if (fd === undefined) return undefined;
  try {
    return frontDoorLine(fd.door.backend, { servers: await fd.door.servers() });
  } catch (error) {
    const coded = asCodedError(error);
    return frontDoorLine(fd.door.backend, { error: coded.message, code: coded.code });
  }
}

async function probe(name: string, { hosts, store }: StatusJobDeps) {
  const host = hosts.config(name);
  // After a swap the host serves another unit than the config's first one.
  const serving = await store.hosts.serving(name);
  const unit = serving?.unit ?? host.currentUnit;
  return await probeHost(
    hosts.transport(name),
    // a blue/green swap may have moved the serving unit to the standby slot's port
    {
      name,
      unit,
      port: servingPortOf(serving, host.servingPort),
      engine: engineFor(serving?.engine ?? host.engine),
    },
    host.commandTimeoutSeconds * 1000,
  );
}
