import { mention } from "../grammar/slack-ids.ts";

/** " by <@U…>" for a person's id (ours: from the record), nothing without one. */
export function by(user: string | undefined): string {
  const said = user === undefined ? undefined : mention(user);
  return said === undefined ? "" : ` by ${said}`;
}
