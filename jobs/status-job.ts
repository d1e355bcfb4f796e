import type { HostRegistry } from "../src/host/host-registry.ts";
import type { Logger } from "../src/log.ts";
import type { StatusJob } from "../src/queue/command-queue.ts";
import type { SlackPoster } from "../src/reporter/slack-poster.ts";
import { renderHostStatus } from "../src/reporter/status-message.ts";
import { probeHost } from "../src/status/probe-host.ts";
import type { SwapStore } from "../src/swap/swap-store.ts";

export interface StatusJobDeps {
  hosts: HostRegistry;
  poster: SlackPoster;
  store: SwapStore;
  log: Logger;
}

/**
 * Probes each requested host and posts its status to the channel the command came from. Probes run
 * concurrently; each is bounded by the host's command timeout, so an unreachable host answers in time.
 */
export async function runStatusJob(
  job: StatusJob,
  { hosts, poster, store, log }: StatusJobDeps,
): Promise<void> {
  await Promise.all(
    job.hosts.map(async (name) => {
      const host = hosts.config(name);
      // After a swap the host serves another unit than the config's first one.
      const unit = (await store.serving(name))?.unit ?? host.currentUnit;
      const status = await probeHost(
        hosts.transport(name),
        { name, unit, port: host.servingPort },
        host.commandTimeoutSeconds * 1000,
      );
      log.info({ host: name, verdict: status.verdict, ms: status.durationMs }, "status probed");
      await poster.post(job.channel, renderHostStatus(status));
    }),
  );
}
