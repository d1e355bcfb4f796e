import { optionWord } from "../src/grammar/option-word.ts";
import { echo, failure, NOT_A_MEMBER, refusal, reply } from "../src/slack/reply.ts";
import type { SubCommand } from "../src/slack/sub-command.ts";
import { knownHosts, knownHostsLine, NAMED_HOSTS, refuseUnknownHost } from "./host-arg.ts";

export const STATUS_USAGE = "/llm status [host] [--all] [--share]";

export type StatusArgs =
  | { ok: true; host?: string; share: boolean; all: boolean }
  | { ok: false; reason: string };

/**
 * Parses the words after `/llm status`: at most one host, `--share` and `--all` anywhere (or `—share` from
 * autocorrect: src/grammar/option-word.ts), which take no value; `--all` only without a host. Any other
 * option is refused.
 */
export function parseStatusArgs(args: readonly string[]): StatusArgs {
  let host: string | undefined;
  let share = false;
  let all = false;
  for (const arg of args) {
    const { name: word, inline } = optionWord(arg);
    if (word === "--all") {
      if (inline !== undefined) return { ok: false, reason: "`--all` takes no value" };
      if (all) return { ok: false, reason: "`--all` is given twice" };
      all = true;
      continue;
    }
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
  if (all && host !== undefined)
    return {
      ok: false,
      reason: "`--all` is the whole fleet's table: leave out the host, or leave out `--all`",
    };
  return { ok: true, ...(host === undefined ? {} : { host }), share, all };
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
    "served model, service, health, GPUs and swap of a host; without one, the fleet: a table, or for more than 25 hosts a summary by state with the ones that want a look (--all: every host; --share: posted in the channel)",
  async handle(request, { config, access, queue }) {
    if (!(await access.isMember(request.user))) {
      return refusal(NOT_A_MEMBER);
    }
    const known = knownHosts(config);
    const parsed = parseStatusArgs(request.args);
    if (!parsed.ok)
      return reply(
        `Cannot show the status: ${parsed.reason}.\nUsage: \`${STATUS_USAGE}\`. ${knownHostsLine(known)}`,
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
        ...(parsed.all ? { all: true } : {}),
        answer,
      });
    } catch (error) {
      return failure(error);
    }
    const privately =
      answer === "private" ? " Only you will see the answer (`--share` posts it in the channel)." : "";
    return reply(
      `⏳ Checking ${hosts.length > NAMED_HOSTS ? `${hosts.length} hosts` : hosts.join(", ")}…${privately}`,
    );
  },
};
