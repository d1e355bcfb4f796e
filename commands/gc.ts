import { didYouMean } from "../src/config/did-you-mean.ts";
import { optionWord } from "../src/grammar/option-word.ts";
import { echo, failure, NOT_A_MEMBER, refusal, reply } from "../src/slack/reply.ts";
import type { SubCommand } from "../src/slack/sub-command.ts";
import { knownHosts, knownHostsLine, NAMED_HOSTS, refuseUnknownHost } from "./host-arg.ts";

export const GC_USAGE = "/llm gc [host] [--dry-run]";

export type GcArgs = { ok: true; host?: string; dryRun: boolean } | { ok: false; reason: string };

/** Parses the words after `/llm gc`: at most one host and `--dry-run` (no value); any other option is refused. */
export function parseGcArgs(args: readonly string[]): GcArgs {
  let host: string | undefined;
  let dryRun = false;
  for (const arg of args) {
    const { name: word, inline } = optionWord(arg);
    if (word === "--dry-run") {
      if (inline !== undefined) return { ok: false, reason: "`--dry-run` takes no value" };
      dryRun = true;
      continue;
    }
    if (word.startsWith("-")) {
      const close = didYouMean(word, ["--dry-run"]);
      return {
        ok: false,
        reason: `unknown option ${echo(word)}${close === undefined ? "" : ` (did you mean \`${close}\`?)`}: the one option is \`--dry-run\``,
      };
    }
    if (host !== undefined) return { ok: false, reason: "name at most one host" };
    host = word;
  }
  return { ok: true, ...(host === undefined ? {} : { host }), dryRun };
}

/**
 * `/llm gc [host] [--dry-run]`: queue disk retention of one host, or of every host. A dry run shows (to the
 * person who asked) what would go and what it would free, and anyone who may use modelswap may ask; a
 * real run deletes, so it needs what a swap needs (a requester), and posts what df says it freed.
 */
export const gcCommand: SubCommand = {
  name: "gc",
  usage: GC_USAGE,
  summary:
    "disk retention: delete old models, engine builds and unit files no unit needs (keeps what serves, what a rollback needs, what is pinned); --dry-run shows what would go",
  async handle(request, { config, access, queue }) {
    const known = knownHosts(config);
    const parsed = parseGcArgs(request.args);
    if (!parsed.ok)
      return reply(`Cannot run gc: ${parsed.reason}.\nUsage: \`${GC_USAGE}\`. ${knownHostsLine(known)}`);
    const allowed = parsed.dryRun
      ? await access.isMember(request.user)
      : await access.isRequester(request.user);
    if (!allowed)
      return refusal(
        parsed.dryRun
          ? NOT_A_MEMBER
          : "Only requesters may delete from hosts (as for swaps). `--dry-run` shows what would go. Ask an admin to add you to the requesters in the config.",
      );
    const unknown = parsed.host === undefined ? undefined : refuseUnknownHost(parsed.host, known);
    if (unknown !== undefined) return reply(`${unknown} Usage: \`${GC_USAGE}\`.`);
    const hosts = parsed.host === undefined ? known : [parsed.host];
    try {
      await queue.enqueueGc({
        hosts,
        dryRun: parsed.dryRun,
        channel: request.channel,
        user: request.user,
        requestedAt: new Date().toISOString(),
      });
    } catch (error) {
      return failure(error);
    }
    const which = hosts.length > NAMED_HOSTS ? `${hosts.length} hosts` : hosts.join(", ");
    return reply(
      parsed.dryRun
        ? `⏳ Looking at the disk of ${which}… nothing will be deleted; only you will see the answer.`
        : `⏳ Reclaiming disk on ${which}… the answer is posted here.`,
    );
  },
};
