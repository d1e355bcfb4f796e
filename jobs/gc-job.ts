import type { HostConfig } from "../src/config/file-schema.ts";
import type { RetentionConfig } from "../src/config/retention-schema.ts";
import { asCodedError } from "../src/errors.ts";
import { fenceDir, fencedTransport } from "../src/host/fence.ts";
import type { HostRegistry } from "../src/host/host-registry.ts";
import type { Logger } from "../src/log.ts";
import { formatGB } from "../src/plan/byte-units.ts";
import type { GcJob } from "../src/queue/command-queue.ts";
import { renderGcReport } from "../src/reporter/gc-message.ts";
import { collectGarbage, freedBytes } from "../src/retention/collect-garbage.ts";
import { gcTarget } from "../src/retention/gc-target.ts";
import { message, type SlackMessage, section } from "../src/slack/blocks.ts";
import type { SlackPoster } from "../src/slack/slack-poster.ts";
import type { Store } from "../src/store/store.ts";
import { takeSwapLease } from "./swap/swap-lease.ts";

export interface GcJobDeps {
  hosts: HostRegistry<HostConfig>;
  poster: SlackPoster;
  store: Store;
  log: Logger;
  /** The top-level `retention:` of the config now. */
  retention: () => RetentionConfig;
  /** How long a gc's lease lasts between renewals (swaps.lockSeconds). */
  leaseMs: () => number;
}

/** The lease a gc outside a swap holds on its host: one gc of a host at a time, with a fence number of its own. */
export const gcLeaseId = (host: string) => `gc-${host}`;

/**
 * `/llm gc`: for each host, what retention lets go, shown (a dry run: only the person who asked sees it)
 * or deleted (posted in the channel). A deleting run takes a lease of its own (and with it a fence
 * number, src/host/fence.ts) and refuses a host a swap holds: every delete runs under that number, so a
 * swap that starts on the host meanwhile makes the host refuse the rest.
 */
export async function runGcJob(job: GcJob, deps: GcJobDeps): Promise<void> {
  const answer = (msg: SlackMessage) =>
    job.dryRun ? deps.poster.ephemeral(job.channel, job.user, msg) : deps.poster.post(job.channel, msg);
  for (const host of job.hosts) {
    try {
      await answer(await gcHost(host, job, deps));
    } catch (error) {
      const coded = asCodedError(error);
      deps.log.warn({ host, code: coded.code, err: coded.message }, "gc of a host failed");
      const why =
        coded.code === "FENCE_STALE"
          ? `a swap changed ${host} while this gc ran, so the host refused the rest of its deletes (${coded.message})`
          : coded.message;
      await answer(plain(`🧹 Disk retention on ${host} stopped: ${why}. Fix: ${coded.fix ?? "try again"}`));
    }
  }
}

async function gcHost(host: string, job: GcJob, deps: GcJobDeps): Promise<SlackMessage> {
  const { store } = deps;
  const config = deps.hosts.find(host);
  if (config === undefined) return plain(`🧹 ${host} is no longer configured: nothing was done.`);
  const transport = deps.hosts.transport(host);
  const target = gcTarget(config, deps.retention(), await store.hosts.serving(host));
  if (job.dryRun) return renderGcReport(await collectGarbage(transport, undefined, target, true));
  const busy = async () => {
    const holder = await store.locks.hostHolder(host);
    return holder === undefined
      ? undefined
      : plain(
          `🧹 ${host} is held by swap ${holder}: nothing was deleted. A swap ends with its own clean-up (retention.afterSwap); run \`/llm gc ${host}\` once it has ended.`,
        );
  };
  const before = await busy();
  if (before !== undefined) return before;
  const lease = await takeSwapLease(store.locks, gcLeaseId(host), deps.leaseMs());
  if (lease === undefined) return plain(`🧹 Another gc of ${host} is running: nothing more was done.`);
  try {
    const after = await busy();
    if (after !== undefined) return after;
    const fenced = fencedTransport(
      transport,
      { dir: fenceDir(config.modelsDir), token: lease.fence },
      config.commandTimeoutSeconds * 1000,
    );
    const report = await collectGarbage(transport, fenced, target, false);
    const deleted = report.outcomes.filter((o) => o.result === "deleted").length;
    await store.audit
      .record({
        kind: "gc",
        who: job.user,
        host,
        detail: `deleted ${deleted} of ${report.plan.remove.length}, freed ${formatGB(freedBytes(report))} (df)`,
      })
      .catch((error) => deps.log.error({ err: asCodedError(error).message }, "gc: audit write failed"));
    deps.log.info({ host, deleted, freed: freedBytes(report) }, "gc done");
    return renderGcReport(report);
  } finally {
    await lease.release();
  }
}

function plain(text: string): SlackMessage {
  return message(text, [section(text)]);
}
