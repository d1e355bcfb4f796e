/**
 * An operator (config `operators:`): a named person who acts through the CLI or the HTTP API with a token
 * of their own. In records and the audit stream an operator is `operator:<name>`, which no Slack id can
 * be (those are U…/W…), so the two never stand for each other.
 */
export const OPERATOR_NAME = /^[a-z][a-z0-9._-]{0,31}$/;

export const OPERATOR_NAME_RULE = "lowercase letters, digits and ._-, starting with a letter, at most 32";

const PREFIX = "operator:";

export function operatorId(name: string): string {
  return `${PREFIX}${name}`;
}

/** The operator's name when `who` is an operator's id, else undefined. */
export function operatorName(who: string): string | undefined {
  if (!who.startsWith(PREFIX)) return undefined;
  const name = who.slice(PREFIX.length);
  return OPERATOR_NAME.test(name) ? name : undefined;
}
