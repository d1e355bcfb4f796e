/**
 * Slack's ids (https://api.slack.com/changelog/2016-08-11-user-id-format-changes): uppercase letters
 * and digits; users start with U or W, user groups with S, channels with C (G for old private ones).
 */
export const USER_ID = /^[UW][A-Z0-9]{2,20}$/;
export const GROUP_ID = /^S[A-Z0-9]{2,20}$/;
export const CHANNEL_ID = /^[CG][A-Z0-9]{2,20}$/;
/** Events API event ids (`Ev08MFMKH6`). */
export const EVENT_ID = /^[A-Za-z0-9]{1,64}$/;
/** A message's `ts`: seconds, a dot, a sequence number (`1712345678.000200`). */
export const MESSAGE_TS = /^\d{1,12}\.\d{1,8}$/;

export function isUserId(text: string): boolean {
  return USER_ID.test(text);
}

/** A user mention in mrkdwn, for an id that is one; anything else is not rendered as a mention. */
export function mention(userId: string): string | undefined {
  return USER_ID.test(userId) ? `<@${userId}>` : undefined;
}

/** Who is in a list of users and groups, as mentions: "<@U0BOB> or <!subteam^S0APPROVE>". */
export function principalsMention(users: readonly string[], groups: readonly string[]): string {
  const all = [
    ...users.filter((u) => USER_ID.test(u)).map((u) => `<@${u}>`),
    ...groups.filter((g) => GROUP_ID.test(g)).map((g) => `<!subteam^${g}>`),
  ];
  if (all.length === 0) return "an approver";
  if (all.length === 1) return all[0]!;
  return `${all.slice(0, -1).join(", ")} or ${all.at(-1)}`;
}

/** Finds our own escaped user mentions (`&lt;@U…&gt;`) again in escaped text. */
export const ESCAPED_MENTION = /&lt;@([UW][A-Z0-9]{2,20})&gt;/g;
