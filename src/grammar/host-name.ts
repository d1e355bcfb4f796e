/** A host's short name, as the config defines it and people type it in Slack: `gpu-1`, `h200-a`. */
export const HOST_NAME = /^[a-z0-9][a-z0-9-]{0,39}$/;

/** What a host name may be, for messages that refuse one. */
export const HOST_NAME_RULE = "lowercase letters, digits and -, starting with a letter or digit, at most 40";

export function isHostName(text: string): boolean {
  return HOST_NAME.test(text);
}
