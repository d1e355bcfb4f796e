import type { HostRegistry } from "../src/host/host-registry.ts";
import type { Logger } from "../src/log.ts";
import type { StatusJob } from "../src/queue/command-queue.ts";
import { type FleetRow, renderFleet } from "../src/reporter/fleet-message.ts";
import { escapeMrkdwn, section } from "../src/reporter/message.ts";
import { renderHostStatus } from "../src/reporter/status-message.ts";
import type { SlackPoster } from "../src/slack/slack-poster.ts";
import { probeHost } from "../src/status/probe-host.ts";
import type { Store } from "../src/store/store.ts";

export interface StatusJobDeps {
  hosts: HostRegistry;
  poster: SlackPoster;
  store: Store;
  log: Logger;
}

/**
 * Probes the requested hosts concurrently — each bounded by its command timeout, so an unreachable host
 * answers in time — and posts to the channel the command came from: the detailed view of one host (with
 * the swap running there), or, for `/llm status` without a host, one compact table of the fleet.
 */
export async function runStatusJob(job: StatusJob, deps: StatusJobDeps): Promise<void> {
  const { poster, store, log } = deps;
  const rows = await Promise.all(
    job.hosts.map(async (name): Promise<FleetRow> => {
      const status = await probe(name, deps);
      log.info({ host: name, verdict: status.verdict, ms: status.durationMs }, "status probed");
      const holder = await store.locks.hostHolder(name);
      const running = holder === undefined ? undefined : await store.swaps.get(holder).catch(() => undefined);
      const [last] = (await store.swaps.history({ host: name, limit: 5 })).records.filter(
        (r) => r.outcome !== undefined,
      );
      return {
        status,
        ...(running === undefined || running.outcome !== undefined
          ? {}
          : { active: { id: running.id, step: running.step, repo: running.request.model.repo } }),
        ...(last?.outcome === undefined
          ? {}
          : { last: { outcome: last.outcome, repo: last.request.model.repo } }),
      };
    }),
  );
  if (job.fleet === true) {
    await poster.post(job.channel, renderFleet(rows));
    return;
  }
  await Promise.all(
    rows.map(async (row) => {
      const msg = renderHostStatus(row.status);
      if (row.active !== undefined) {
        msg.blocks.push(
          section(
            `🔄 Swap \`${row.active.id}\` to \`${escapeMrkdwn(row.active.repo)}\` is at stage *${row.active.step}*.`,
          ),
        );
      }
      await poster.post(job.channel, msg);
    }),
  );
}

async function probe(name: string, { hosts, store }: StatusJobDeps) {
  const host = hosts.config(name);
  // After a swap the host serves another unit than the config's first one.
  const unit = (await store.hosts.serving(name))?.unit ?? host.currentUnit;
  return await probeHost(
    hosts.transport(name),
    { name, unit, port: host.servingPort },
    host.commandTimeoutSeconds * 1000,
  );
}
