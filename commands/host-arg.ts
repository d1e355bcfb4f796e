import type { Config } from "../src/config/load-config.ts";
import { isHostName } from "../src/grammar/host-name.ts";
import { echo } from "../src/slack/reply.ts";

/** The configured hosts' names, in config order. */
export function knownHosts(config: Config): string[] {
  return config.file.hosts.map((h) => h.name);
}

/** A host a user typed: undefined when it is a configured host, else the answer that says which are. */
export function refuseUnknownHost(word: string, known: readonly string[]): string | undefined {
  if (isHostName(word) && known.includes(word)) return undefined;
  return `Unknown host ${echo(word)}. Known hosts: ${known.join(", ")}.`;
}
