import { failure, refusal, reply } from "../src/slack/reply.ts";
import type { SubCommand } from "../src/slack/sub-command.ts";
import { knownHosts, refuseUnknownHost } from "./host-arg.ts";

/** `/llm status [host]`: queue a probe of one host, or of every host. */
export const statusCommand: SubCommand = {
  name: "status",
  usage: "/llm status [host]",
  summary: "served model, service, health, GPUs and swap of a host; without one, a table of every host",
  async handle(request, { config, access, queue }) {
    if (!(await access.isMember(request.user))) {
      return refusal(
        "You are not allowed to use modelswap. Ask an admin to add you to the requesters or approvers.",
      );
    }
    const known = knownHosts(config);
    if (request.args.length > 1)
      return reply(`Usage: \`${statusCommand.usage}\`. Known hosts: ${known.join(", ")}.`);
    const wanted = request.args[0];
    const unknown = wanted === undefined ? undefined : refuseUnknownHost(wanted, known);
    if (unknown !== undefined) return reply(unknown);
    const hosts = wanted === undefined ? known : [wanted];
    try {
      await queue.enqueueStatus({
        hosts,
        channel: request.channel,
        user: request.user,
        requestedAt: new Date().toISOString(),
        fleet: wanted === undefined,
      });
    } catch (error) {
      return failure(error);
    }
    return reply(`⏳ Checking ${hosts.join(", ")}…`);
  },
};
