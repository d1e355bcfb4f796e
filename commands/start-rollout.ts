import { DEFAULT_WAVE_POLICY } from "../src/config/groups-schema.ts";
import { hostEngine } from "../src/config/host-engines.ts";
import type { Config } from "../src/config/load-config.ts";
import { asCodedError } from "../src/errors.ts";
import { escapeMrkdwn } from "../src/escape-mrkdwn.ts";
import { newRolloutId } from "../src/grammar/rollout-id.ts";
import { newSwapId } from "../src/grammar/swap-id.ts";
import type { SwapRequest } from "../src/grammar/swap-request.ts";
import { queueSwap } from "../src/queue/queue-swap.ts";
import type { RolloutRecord } from "../src/rollout/rollout-record.ts";
import { planWaves } from "../src/rollout/waves.ts";
import { accepted, busy, failure, reply } from "../src/slack/reply.ts";
import type { CommandAnswer, CommandDeps } from "../src/slack/sub-command.ts";
import { newStages, type SwapRecord } from "../src/swap/swap-record.ts";
import { knownHosts, refuseUnknownHost } from "./host-arg.ts";
import { takeHost } from "./take-host.ts";

/**
 * `/llm swap <model> --group <g>` or `--hosts <set>`: a rollout. Every host is taken (all or none: a busy
 * one refuses the rollout and gives the others back), the rollout is saved, and each host's swap is
 * queued with it: they resolve, plan, download and build at once, then wait for the rollout's plan to
 * be approved and for their wave (jobs/rollout/advance-rollout.ts).
 */
export async function startRollout(
  request: { user: string },
  swap: SwapRequest,
  { config, store, swaps, reports }: Pick<CommandDeps, "config" | "store" | "swaps" | "reports">,
): Promise<CommandAnswer> {
  const chosen = chooseHosts(swap, config);
  if (!chosen.ok) return reply(chosen.text);
  const { hosts, group, policy } = chosen;
  for (const host of hosts) {
    const hostConfig = config.file.hosts.find((h) => h.name === host)!;
    const engine = hostEngine(hostConfig, swap.engine);
    if (!engine.ok)
      return reply(
        `Cannot roll out to ${host}: ${escapeMrkdwn(engine.problem)}. ${escapeMrkdwn(engine.fix)}. Nothing was queued.`,
      );
  }
  const childRequest = {
    model: swap.model,
    tp: swap.tp,
    dryRun: false,
    ...(swap.engineRef === undefined ? {} : { engineRef: swap.engineRef }),
    ...(swap.engine === undefined ? {} : { engine: swap.engine }),
    ...(swap.sets === undefined ? {} : { sets: swap.sets }),
  };
  const model = `${swap.model.repo}${swap.model.revision === "main" ? "" : `@${swap.model.revision}`}`;
  return await queueRollout(
    {
      user: request.user,
      hosts,
      ...(group === undefined ? {} : { group }),
      policy,
      request: { ...childRequest, host: undefined },
      what: `\`${model}\``,
      audit: `rollout of ${model}`,
      child: async (base) => ({ ...base, request: { ...childRequest, host: base.host }, step: "resolve" }),
    },
    { config, store, swaps, reports },
  );
}

/** A rollout to queue: its hosts and policy, what it asks, and each host's swap. */
export interface RolloutSpec {
  user: string;
  hosts: readonly string[];
  group?: string;
  policy: RolloutRecord["policy"];
  request: RolloutRecord["request"];
  /** The rollout that this one takes back (`/llm rollback --rollout`). */
  undoes?: string;
  /** How the answer names what it does (`\`org/model\``), and how the audit stream does. */
  what: string;
  audit: string;
  /** Each host's swap from its id, host, wave marker and the fields every swap has. */
  child(base: Omit<SwapRecord, "request" | "step">): Promise<SwapRecord>;
}

/**
 * Takes every host (all or none), saves the rollout, queues each host's swap marked with the rollout and
 * its wave, then the rollout's job; on any failure gives the hosts back, cancels what was queued and
 * records the rollout as failed.
 */
export async function queueRollout(
  spec: RolloutSpec,
  { config, store, swaps, reports }: Pick<CommandDeps, "config" | "store" | "swaps" | "reports">,
): Promise<CommandAnswer> {
  const { hosts, group, policy } = spec;
  const waves = planWaves(hosts, policy);
  const id = newRolloutId();
  const children = hosts.map((host) => ({
    host,
    swapId: newSwapId(),
    wave: waves.findIndex((w) => w.includes(host)),
  }));

  const taken: { host: string; swapId: string }[] = [];
  const giveBack = async () => {
    for (const t of taken) await store.locks.unlockHost(t.host, t.swapId).catch(() => undefined);
  };
  const notes: string[] = [];
  for (const child of children) {
    const got = await takeHost(child.host, child.swapId, { store, swaps });
    if (!got.ok) {
      await giveBack();
      if ("error" in got) return failure(got.error);
      return busy(`${got.busy}\nThe rollout needs every host of it free; nothing was queued.`);
    }
    taken.push(child);
    if (got.note !== undefined) notes.push(got.note);
  }

  const now = new Date().toISOString();
  const channel = config.file.slack.channel;
  const rollout: RolloutRecord = {
    id,
    requester: spec.user,
    channel,
    createdAt: now,
    request: spec.request,
    ...(group === undefined ? {} : { group }),
    ...(spec.undoes === undefined ? {} : { undoes: spec.undoes }),
    policy,
    hosts: children,
    step: "plan",
    wave: 0,
    waves: [],
  };
  const queued: string[] = [];
  try {
    await store.rollouts.save(rollout, {
      audit: [
        {
          at: now,
          kind: "request",
          who: spec.user,
          swap: id,
          detail: `${spec.audit} to ${hosts.join(", ")}${group === undefined ? "" : ` (group ${group})`} in ${waves.length} waves`,
        },
      ],
    });
    // its card first: above its hosts' cards in the channel
    await reports.soon(id, "urgent").catch(() => undefined);
    for (const [i, child] of children.entries()) {
      const record = await spec.child({
        id: child.swapId,
        host: child.host,
        requester: spec.user,
        channel,
        createdAt: now,
        rollout: { id, wave: child.wave },
        stages: newStages(),
        tasks: {},
      });
      // queueSwap gives the host back itself when it fails
      taken.splice(taken.indexOf(children[i]!), 1);
      await queueSwap(
        record,
        `${spec.audit} in rollout ${id} (wave ${child.wave + 1})`,
        { store, swaps, reports },
        true,
      );
      queued.push(child.swapId);
    }
    // its job last: it finds every host's swap saved
    await swaps.enqueue(id);
  } catch (error) {
    // what was queued ends before its switch; the rollout's record says it never started
    for (const swapId of queued) {
      await store.approvals.requestCancel(swapId, spec.user).catch(() => undefined);
      await swaps.wake(swapId).catch(() => undefined);
    }
    await giveBack();
    const reason = `it could not be queued: ${asCodedError(error).message}`;
    await store.rollouts
      .save({ ...rollout, step: "done", outcome: "failed", reason, finishedAt: new Date().toISOString() })
      .catch(() => undefined);
    return failure(error);
  }
  const waveWords = waves
    .map((w, i) => (i === 0 ? `canary ${w.join(", ")}` : `then ${w.length} host${w.length === 1 ? "" : "s"}`))
    .join(", ");
  return accepted(
    `🔄 Rollout queued: ${spec.what} → ${hosts.length} hosts${group === undefined ? "" : ` of group *${group}*`} in ${waves.length} wave${waves.length === 1 ? "" : "s"} (${waveWords}), rollout \`${id}\`. Every host plans${spec.undoes === undefined ? " and downloads" : ""} now; the rollout's plan comes up for one approval in its thread in <#${channel}>.${notes.length === 0 ? "" : `\n${notes.join("\n")}`}`,
    id,
  );
}

type Chosen =
  | { ok: true; hosts: string[]; group?: string; policy: RolloutRecord["policy"] }
  | { ok: false; text: string };

/** The rollout's hosts and policy: the group's, or `--hosts` with the default policy; refused with why. */
function chooseHosts(swap: SwapRequest, config: Config): Chosen {
  const groups = config.file.groups;
  if (swap.group !== undefined) {
    const group = groups[swap.group];
    if (group === undefined) {
      const names = Object.keys(groups);
      return {
        ok: false,
        text: `Unknown group ${escapeMrkdwn(swap.group)}. ${names.length === 0 ? "No groups are configured: an admin adds them under groups: in the config (docs/rollouts.md), or name the hosts with `--hosts gpu-[1-4]`." : `Groups: ${names.join(", ")}.`} Nothing was queued.`,
      };
    }
    const { hosts, ...policy } = group;
    return { ok: true, hosts, group: swap.group, policy };
  }
  const hosts = swap.hosts ?? [];
  const known = knownHosts(config);
  for (const host of hosts) {
    const unknown = refuseUnknownHost(host, known);
    if (unknown !== undefined) return { ok: false, text: `${unknown} Nothing was queued.` };
  }
  return { ok: true, hosts, policy: DEFAULT_WAVE_POLICY };
}
