import { didYouMean } from "../src/config/did-you-mean.ts";
import type { Config } from "../src/config/load-config.ts";
import { isHostName } from "../src/grammar/host-name.ts";
import { echo } from "../src/slack/reply.ts";

/** The configured hosts' names, in config order. */
export function knownHosts(config: Config): string[] {
  return config.file.hosts.map((h) => h.name);
}

/** Up to this many hosts, a reply names them all. */
export const NAMED_HOSTS = 12;

/**
 * "Known hosts: …" for a reply: every host of a small fleet; of a big one (a thousand names would make a
 * reply Slack truncates), the host closest to what was typed, the first few, and how many there are.
 */
export function knownHostsLine(known: readonly string[], typed?: string): string {
  if (known.length <= NAMED_HOSTS) return `Known hosts: ${known.join(", ")}.`;
  const close = typed === undefined ? undefined : didYouMean(typed, known);
  const first = known.filter((h) => h !== close).slice(0, 5);
  return `${close === undefined ? "" : `Did you mean ${close}? `}Known hosts: ${first.join(", ")}, … (${known.length} in all; \`/llm status\` lists them).`;
}

/** A host a user typed: undefined when it is a configured host, else the answer that says which are. */
export function refuseUnknownHost(word: string, known: readonly string[]): string | undefined {
  if (isHostName(word) && known.includes(word)) return undefined;
  return `Unknown host ${echo(word)}. ${knownHostsLine(known, word)}`;
}
