import { newSwapId } from "../src/grammar/swap-id.ts";
import { failure, refusal, reply } from "../src/slack/reply.ts";
import type { SubCommand } from "../src/slack/sub-command.ts";
import { newStages, type SwapRecord } from "../src/swap/swap-record.ts";
import { knownHosts, refuseUnknownHost } from "./host-arg.ts";
import { queueSwap } from "./queue-swap.ts";
import { takeHost } from "./take-host.ts";

/**
 * `/llm rollback [host]`: a swap back to the unit that served before the last swap — its unit file and
 * model files are still on the host, so the plan goes straight to approval, then switch, health, sanity
 * and benchmark like any swap.
 */
export const rollbackCommand: SubCommand = {
  name: "rollback",
  usage: "/llm rollback [host]",
  summary: "go back to the model a host served before its last swap (needs approval like a swap)",
  async handle(request, { config, access, store, swaps, reports }) {
    if (!(await access.isRequester(request.user))) {
      return refusal(
        "Only requesters may start a rollback. Ask an admin to add you to the requesters in the config.",
      );
    }
    const known = knownHosts(config);
    if (request.args.length > 1)
      return reply(`Usage: \`${rollbackCommand.usage}\`. Known hosts: ${known.join(", ")}.`);
    const host = request.args[0] ?? (known.length === 1 ? known[0] : undefined);
    if (host === undefined)
      return reply(`Which host? \`${rollbackCommand.usage}\`. Known hosts: ${known.join(", ")}.`);
    const unknown = refuseUnknownHost(host, known);
    if (unknown !== undefined) return reply(unknown);

    const serving = await store.hosts.serving(host);
    const previous = serving?.previous;
    if (previous === undefined) {
      return reply(
        `Nothing to roll back to: no swap has changed what *${host}* serves yet (it serves the unit from the config).`,
      );
    }
    // The swap that once installed the unit we go back to, when there was one: its plan tells the model.
    const earlier = (await store.swaps.history({ host, limit: 50 })).records.find(
      (r) => r.outcome === "succeeded" && r.plan?.unitName === previous.unit,
    );
    const id = newSwapId();
    const taken = await takeHost(host, id, { store, swaps });
    if (!taken.ok) return "error" in taken ? failure(taken.error) : reply(taken.busy);
    const note = taken.note === undefined ? "" : `\n${taken.note}`;
    const record: SwapRecord = {
      id,
      host,
      requester: request.user,
      channel: config.file.slack.channel,
      createdAt: new Date().toISOString(),
      request: {
        model: { repo: previous.repo ?? earlier?.plan?.model.repo ?? previous.unit, revision: "rollback" },
        host,
        tp: undefined,
        dryRun: false,
        engineRef: "main",
      },
      rollbackTo: { unit: previous.unit, ...(earlier === undefined ? {} : { swapId: earlier.id }) },
      step: "preflight",
      stages: newStages(),
      tasks: {},
    };
    try {
      await queueSwap(record, `rollback to ${previous.unit}`, { store, swaps, reports }, true);
    } catch (error) {
      return failure(error);
    }
    return reply(
      `↩️ Rollback queued: *${host}* back to \`${previous.unit}\` (swap \`${id}\`). An approver's ✅ on its plan starts it.${note}`,
    );
  },
};
