import type { SubCommand } from "../src/slack/sub-command.ts";
import { usageMessage } from "../src/slack/usage.ts";

export function helpCommand(all: () => readonly SubCommand[]): SubCommand {
  return {
    name: "help",
    usage: "/llm help",
    summary: "show this help",
    handle: async () => usageMessage(all()),
  };
}
