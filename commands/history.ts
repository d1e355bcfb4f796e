import { z } from "zod";
import { optionWord } from "../src/grammar/option-word.ts";
import { echo, failure, NOT_A_MEMBER, refusal, reply } from "../src/slack/reply.ts";
import type { SubCommand } from "../src/slack/sub-command.ts";
import { knownHosts, refuseUnknownHost } from "./host-arg.ts";

export const HISTORY_USAGE = "/llm history [host] [--limit N]";
export const DEFAULT_HISTORY_LIMIT = 10;
export const MAX_HISTORY_LIMIT = 50;

const limit = z
  .string()
  .regex(/^\d{1,3}$/)
  .transform(Number)
  .pipe(z.number().int().min(1).max(MAX_HISTORY_LIMIT));

export type HistoryArgs = { ok: true; host?: string; limit: number } | { ok: false; reason: string };

/**
 * Parses the words after `/llm history`: at most one host, and `--limit N` (or `--limit=N`, or `—limit N`
 * from autocorrect: src/grammar/option-word.ts), N 1–50.
 */
export function parseHistoryArgs(args: readonly string[]): HistoryArgs {
  let host: string | undefined;
  let count: number | undefined;
  for (let i = 0; i < args.length; i++) {
    const { name: word, inline } = optionWord(args[i]!);
    if (word === "--limit") {
      if (count !== undefined) return { ok: false, reason: "`--limit` is given twice" };
      const value = inline ?? args[++i];
      const parsed = limit.safeParse(value ?? "");
      if (!parsed.success)
        return {
          ok: false,
          reason: `\`--limit\` needs a whole number from 1 to ${MAX_HISTORY_LIMIT}${value === undefined ? "" : `, not ${echo(value)}`}`,
        };
      count = parsed.data;
      continue;
    }
    if (word.startsWith("-")) return { ok: false, reason: `unknown option ${echo(word)}` };
    if (host !== undefined) return { ok: false, reason: "name at most one host" };
    host = word;
  }
  return {
    ok: true,
    ...(host === undefined ? {} : { host }),
    limit: count ?? DEFAULT_HISTORY_LIMIT,
  };
}

/**
 * `/llm history [host] [--limit N]`: the ledger, newest first. The ack only validates and enqueues (no
 * Redis reads beyond the enqueue, so it answers well within Slack's 3 s); a worker reads the records and
 * posts the table in the channel, where the team can see and link it, like `/llm status`.
 */
export const historyCommand: SubCommand = {
  name: "history",
  usage: HISTORY_USAGE,
  summary: `the ledger, newest first: who asked and approved, model and sha, outcome, downtime, benchmark (default ${DEFAULT_HISTORY_LIMIT}, at most ${MAX_HISTORY_LIMIT})`,
  async handle(request, { config, access, queue }) {
    if (!(await access.isMember(request.user))) {
      return refusal(NOT_A_MEMBER);
    }
    const known = knownHosts(config);
    const parsed = parseHistoryArgs(request.args);
    if (!parsed.ok) return reply(`Cannot show the history: ${parsed.reason}.\nUsage: \`${HISTORY_USAGE}\``);
    const { host } = parsed;
    const unknown = host === undefined ? undefined : refuseUnknownHost(host, known);
    if (unknown !== undefined) return reply(unknown);
    try {
      await queue.enqueueHistory({
        ...(host === undefined ? {} : { host }),
        limit: parsed.limit,
        channel: request.channel,
        user: request.user,
        requestedAt: new Date().toISOString(),
      });
    } catch (error) {
      return failure(error);
    }
    return reply(`📜 Reading the swap history of ${host ?? "every host"}…`);
  },
};
