import { asCodedError, describeError } from "../errors.ts";
import { escapeMrkdwn } from "../escape-mrkdwn.ts";
import { message, type SlackMessage, section } from "./blocks.ts";
import type { CommandAnswer } from "./sub-command.ts";

/** A short ephemeral answer. */
export function reply(text: string): SlackMessage {
  return message(text, [section(text)]);
}

/** The user may not do this. */
export function refusal(what: string): CommandAnswer {
  return { ...reply(`🚫 ${what}`), outcome: "refused" };
}

/** Someone who is neither a requester nor an approver: what they may do about it. */
export const NOT_A_MEMBER =
  "You are not allowed to use modelswap. Ask an admin to add you to the requesters or approvers.";

/** It could not be done now (an error with its code and fix). */
export function failure(error: unknown): CommandAnswer {
  const coded = asCodedError(error);
  return {
    ...reply(`⚠️ ${escapeMrkdwn(describeError(error))}`),
    outcome: "failed",
    code: coded.code,
    fix: coded.fix,
  };
}

/** Another swap holds the host. */
export function busy(text: string): CommandAnswer {
  return { ...reply(text), outcome: "busy" };
}

/** Something was queued or asked for swap `swap`. */
export function accepted(text: string, swap: string): CommandAnswer {
  return { ...reply(text), outcome: "accepted", swap };
}

/** Echoes untrusted text back safely: escaped, single line, short. */
export function echo(text: string): string {
  // cut by code points: half an emoji (a lone surrogate) is not valid text for Slack
  const chars = Array.from(text.replace(/[\r\n\t]+/g, " "));
  const short = chars.length > 40 ? `${chars.slice(0, 39).join("")}…` : chars.join("");
  return `\`${escapeMrkdwn(short).replaceAll("`", "ˋ")}\``;
}
