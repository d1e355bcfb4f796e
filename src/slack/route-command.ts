import type { SlackMessage } from "./blocks.ts";
import { echo, failure } from "./reply.ts";
import type { CommandDeps, CommandRequest, SubCommand } from "./sub-command.ts";
import { usageMessage } from "./usage.ts";

/** Splits `/llm` text into a sub-command and its words; Slack may wrap links as <url|label>. */
export function splitCommandText(text: string): { sub: string; args: string[] } {
  const words = text
    .trim()
    .split(/\s+/)
    .filter((w) => w !== "");
  return { sub: (words[0] ?? "help").toLowerCase(), args: words.slice(1) };
}

/** Finds the sub-command and runs it; anything unknown gets the usage. Never throws. */
export async function routeCommand(
  text: string,
  request: Omit<CommandRequest, "args">,
  commands: readonly SubCommand[],
  deps: CommandDeps,
): Promise<SlackMessage> {
  const { sub, args } = splitCommandText(text);
  const command = commands.find((c) => c.name === sub);
  if (command === undefined) return usageMessage(commands, `Unknown sub-command ${echo(sub)}.`);
  try {
    return await command.handle({ ...request, args }, deps);
  } catch (error) {
    return failure(error);
  }
}
