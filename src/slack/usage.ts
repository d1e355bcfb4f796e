import { escapeMrkdwn } from "../escape-mrkdwn.ts";
import { context, header, message, type SlackMessage, section } from "./blocks.ts";
import type { SubCommand } from "./sub-command.ts";

/** How options may be typed: what `optionWord` (src/grammar/option-word.ts) reads as an option. */
export const OPTION_FORMS =
  "Options: `--host gpu-1` or `--host=gpu-1`; a `—host` that autocorrect made of `--host` works too.";

/** The usage of every sub-command; also the answer to anything the bot does not understand. */
export function usageMessage(commands: readonly SubCommand[], preface?: string): SlackMessage {
  const lines = commands.map((c) => `\`${escapeMrkdwn(c.usage)}\` — ${c.summary}`);
  const blocks = [header("modelswap: /llm")];
  if (preface !== undefined) blocks.push(section(preface));
  blocks.push(
    section(lines.join("\n")),
    context(`${OPTION_FORMS} Swaps need an approver's ✅ before production is touched.`),
  );
  return message([preface, ...lines].filter(Boolean).join("\n"), blocks);
}
