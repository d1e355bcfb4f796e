import { optionWord } from "../src/grammar/option-word.ts";
import { echo, failure, refusal, reply } from "../src/slack/reply.ts";
import type { SubCommand } from "../src/slack/sub-command.ts";
import { knownHosts, refuseUnknownHost } from "./host-arg.ts";

export const STATUS_USAGE = "/llm status [host] [--share]";

export type StatusArgs = { ok: true; host?: string; share: boolean } | { ok: false; reason: string };

/**
 * Parses the words after `/llm status`: at most one host, and `--share` anywhere (or `—share` from
 * autocorrect: src/grammar/option-word.ts), which takes no value. Any other option is refused.
 */
export function parseStatusArgs(args: readonly string[]): StatusArgs {
  let host: string | undefined;
  let share = false;
  for (const arg of args) {
    const { name: word, inline } = optionWord(arg);
    if (word === "--share") {
      if (inline !== undefined) return { ok: false, reason: "`--share` takes no value" };
      if (share) return { ok: false, reason: "`--share` is given twice" };
      share = true;
      continue;
    }
    if (word.startsWith("-")) return { ok: false, reason: `unknown option ${echo(word)}` };
    if (host !== undefined) return { ok: false, reason: "name at most one host" };
    host = word;
  }
  return { ok: true, ...(host === undefined ? {} : { host }), share };
}

/**
 * `/llm status [host] [--share]`: queue a probe of one host, or of every host. The answer goes to the
 * person who asked alone (`status.visibility: private`, the default) unless `--share` is given, or to the
 * channel whatever is typed (`status.visibility: channel`).
 */
export const statusCommand: SubCommand = {
  name: "status",
  usage: STATUS_USAGE,
  summary:
    "served model, service, health, GPUs and swap of a host; without one, a table of every host (--share: posted in the channel)",
  async handle(request, { config, access, queue }) {
    if (!(await access.isMember(request.user))) {
      return refusal(
        "You are not allowed to use modelswap. Ask an admin to add you to the requesters or approvers.",
      );
    }
    const known = knownHosts(config);
    const parsed = parseStatusArgs(request.args);
    if (!parsed.ok)
      return reply(
        `Cannot show the status: ${parsed.reason}.\nUsage: \`${STATUS_USAGE}\`. Known hosts: ${known.join(", ")}.`,
      );
    const wanted = parsed.host;
    const unknown = wanted === undefined ? undefined : refuseUnknownHost(wanted, known);
    if (unknown !== undefined) return reply(unknown);
    const hosts = wanted === undefined ? known : [wanted];
    const answer = parsed.share || config.file.status.visibility === "channel" ? "channel" : "private";
    try {
      await queue.enqueueStatus({
        hosts,
        channel: request.channel,
        user: request.user,
        requestedAt: new Date().toISOString(),
        fleet: wanted === undefined,
        answer,
      });
    } catch (error) {
      return failure(error);
    }
    const privately =
      answer === "private" ? " Only you will see the answer (`--share` posts it in the channel)." : "";
    return reply(`⏳ Checking ${hosts.join(", ")}…${privately}`);
  },
};
