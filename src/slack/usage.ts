import { context, escapeMrkdwn, header, message, type SlackMessage, section } from "../reporter/message.ts";
import type { SubCommand } from "./sub-command.ts";

/** The usage of every sub-command; also the answer to anything the bot does not understand. */
export function usageMessage(commands: readonly SubCommand[], preface?: string): SlackMessage {
  const lines = commands.map((c) => `\`${escapeMrkdwn(c.usage)}\` — ${c.summary}`);
  const blocks = [header("modelswap: /llm")];
  if (preface !== undefined) blocks.push(section(preface));
  blocks.push(
    section(lines.join("\n")),
    context("Swaps need an approver's ✅ before production is touched."),
  );
  return message([preface, ...lines].filter(Boolean).join("\n"), blocks);
}
