import { isRolloutId, ROLLOUT_ID_EXAMPLE } from "../src/grammar/rollout-id.ts";
import { newSwapId } from "../src/grammar/swap-id.ts";
import { echo, reply } from "../src/slack/reply.ts";
import type { CommandAnswer, CommandDeps } from "../src/slack/sub-command.ts";
import { rollbackRecord } from "../src/store/rollback-record.ts";
import type { SwapRecord } from "../src/swap/swap-record.ts";
import { queueRollout } from "./start-rollout.ts";

/**
 * `/llm rollback --rollout <id>`: every host a finished rollout changed, and which still serves what that
 * rollout put there, goes back to what it served before, as one rollout: one plan, one approval, the same
 * waves and gate (each host's swap is the swap `/llm rollback <host>` queues).
 */
export async function rollbackRollout(
  id: string | undefined,
  user: string,
  deps: Pick<CommandDeps, "config" | "store" | "swaps" | "reports">,
): Promise<CommandAnswer> {
  const { store } = deps;
  if (id === undefined || !isRolloutId(id))
    return reply(
      `Which rollout? \`/llm rollback --rollout ROLLOUT-ID\`: rollout ids look like \`${ROLLOUT_ID_EXAMPLE}\`${id === undefined ? "" : `, not ${echo(id)}`}.`,
    );
  const record = await store.rollouts.get(id);
  if (record === undefined) return reply(`No rollout \`${id}\`.`);
  if (record.outcome === undefined)
    return reply(
      `Rollout \`${id}\` is still going: \`/llm cancel ${id}\` stops it first, then take it back.`,
    );
  const hosts: string[] = [];
  for (const h of record.hosts) {
    const child = await store.swaps.get(h.swapId).catch(() => undefined);
    const serving = await store.hosts.serving(h.host);
    if (child?.outcome === "succeeded" && serving?.swapId === child.id && h.undo?.outcome !== "succeeded")
      hosts.push(h.host);
  }
  if (hosts.length === 0)
    return reply(`Nothing to take back: no host serves what rollout \`${id}\` put there any more.`);
  // each host's rollback, made once: queueRollout gives it its id, its wave and the rollout's marks
  const targets = new Map<string, SwapRecord>();
  for (const host of hosts) {
    const target = await rollbackRecord(
      { id: newSwapId(), host, requester: user, channel: record.channel },
      store,
    );
    if (!target.ok) return reply(`Cannot take back ${host}: ${target.why}`);
    targets.set(host, target.record);
  }
  return await queueRollout(
    {
      user,
      hosts,
      ...(record.group === undefined ? {} : { group: record.group }),
      policy: record.policy,
      request: record.request,
      undoes: id,
      what: `a rollback of rollout \`${id}\``,
      audit: `rollback of rollout ${id}`,
      child: async (base) => ({ ...targets.get(base.host)!, ...base }),
    },
    deps,
  );
}
