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
  const flat = text.replace(/[\r\n\t]+/g, " ");
  return `\`${escapeMrkdwn(flat.length > 40 ? `${flat.slice(0, 39)}…` : flat).replaceAll("`", "ˋ")}\``;
}
