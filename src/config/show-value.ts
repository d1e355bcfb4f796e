const SECRET_KEY = /(token|secret|password|passphrase|private_?key$)/i;
const SECRET_VALUE = /(xox[abpr]-|xapp-|hf_[A-Za-z0-9]{10,}|-----BEGIN [A-Z ]*PRIVATE KEY-----)/;
const TOKEN_KIND = /^(xox[a-z]|xapp|hf)[-_]/;
const MAX = 48;

/** Does this setting's name or value look like a credential, which nothing may print back? */
export function looksSecret(key: string, value: unknown): boolean {
  return SECRET_KEY.test(key) || (typeof value === "string" && SECRET_VALUE.test(value));
}

/**
 * A value as `config check` shows what was given: short, control characters escaped, a password in a
 * URL masked (maskCredentials), and a secret-looking value (or the path of a private key) not shown at all. `typed` adds
 * what kind of value it is, for a value of the wrong type.
 */
export function showValue(key: string, value: unknown, typed = false): string {
  if (typeof value === "string" && looksSecret(key, value)) {
    const kind = TOKEN_KIND.exec(value)?.[0];
    return `(not shown: a secret, ${value.length} characters${kind === undefined ? "" : ` starting ${kind}`})`;
  }
  if (key === "privateKeyPath") return "(not shown: it says where a credential lives)";
  if (value === null) return "nothing (the key has no value after it)";
  if (Array.isArray(value)) return `a list of ${value.length} item${value.length === 1 ? "" : "s"}`;
  if (typeof value === "object") {
    const keys = Object.keys(value);
    return keys.length === 0
      ? "an empty mapping"
      : `a mapping (${keys.slice(0, 4).join(", ")}${keys.length > 4 ? ", …" : ""})`;
  }
  if (typeof value === "string") {
    const masked = maskCredentials(value);
    const short =
      masked.length > MAX
        ? `${JSON.stringify(masked.slice(0, MAX))}… (${value.length} characters)`
        : JSON.stringify(masked);
    return typed ? `${short} (text)` : short;
  }
  const shown = String(value);
  if (!typed) return shown;
  return typeof value === "number"
    ? `${shown} (a number)`
    : typeof value === "boolean"
      ? `${shown} (true/false)`
      : shown;
}

/**
 * The credentials in a text that may hold a URL or a list of host:port, masked: a user info's password,
 * read up to the last `@` as the REDIS_URL check reads it (`redis://user:***@host`, whatever characters it
 * holds); a user name alone (`redis://***@host`: redis-cli reads `redis://secret@host` as the password);
 * and a query parameter naming a password, secret, token, auth or user (`?password=***`: ioredis logs in
 * with `?password=`).
 */
export function maskCredentials(value: string): string {
  return value
    .replace(
      /([A-Za-z][A-Za-z0-9+.-]*:\/\/|^|[\s,;])((?:(?!:\/\/)[^\s,;])*)@/g,
      (_whole, before: string, userInfo: string) => {
        const colon = userInfo.indexOf(":");
        return `${before}${colon < 0 ? "***" : `${userInfo.slice(0, colon)}:***`}@`;
      },
    )
    .replace(/([?&][^=&#\s]*(?:pass|pwd|secret|token|auth|user)[^=&#\s]*=)[^&#\s]*/gi, "$1***");
}
