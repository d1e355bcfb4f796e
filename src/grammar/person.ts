import { escapeMrkdwn } from "../escape-mrkdwn.ts";
import { operatorName } from "./operator-id.ts";
import { mention } from "./slack-ids.ts";

/** " by <@U…>" for a person's id (ours: from the record), " by operator alice" for an operator, nothing without one. */
export function by(user: string | undefined): string {
  const said = user === undefined ? undefined : person(user);
  return said === undefined ? "" : ` by ${said}`;
}

/**
 * A person as mrkdwn: a Slack member as a mention, an operator (the CLI, the HTTP API) by name; undefined
 * for anything else (the bot itself).
 */
export function person(who: string): string | undefined {
  const name = operatorName(who);
  return name === undefined ? mention(who) : `operator ${escapeMrkdwn(name)}`;
}
