import { describeError } from "../errors.ts";
import { escapeMrkdwn, message, type SlackMessage, section } from "../reporter/message.ts";

/** A short ephemeral answer. */
export function reply(text: string): SlackMessage {
  return message(text, [section(text)]);
}

export function refusal(what: string): SlackMessage {
  return reply(`🚫 ${what}`);
}

export function failure(error: unknown): SlackMessage {
  return reply(`⚠️ ${escapeMrkdwn(describeError(error))}`);
}

/** Echoes untrusted text back safely: escaped, single line, short. */
export function echo(text: string): string {
  // cut by code points: half an emoji (a lone surrogate) is not valid text for Slack
  const chars = Array.from(text.replace(/[\r\n\t]+/g, " "));
  const short = chars.length > 40 ? `${chars.slice(0, 39).join("")}…` : chars.join("");
  return `\`${escapeMrkdwn(short).replaceAll("`", "ˋ")}\``;
}
