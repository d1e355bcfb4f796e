import { type DestinationStream, type Logger, pino } from "pino";

export type { Logger } from "pino";

/** Paths pino censors wherever they appear in a log record. */
const REDACT_PATHS = [
  "token",
  "*.token",
  "botToken",
  "*.botToken",
  "appToken",
  "*.appToken",
  "signingSecret",
  "*.signingSecret",
  "hfToken",
  "*.hfToken",
  "privateKey",
  "*.privateKey",
  "passphrase",
  "*.passphrase",
  "authorization",
  "*.authorization",
  "headers.authorization",
  "env.SLACK_BOT_TOKEN",
  "env.SLACK_SIGNING_SECRET",
  "env.SLACK_APP_TOKEN",
  "env.HF_TOKEN",
  "password",
  "*.password",
  "sentinelPassword",
  "*.sentinelPassword",
  "env.REDIS_PASSWORD",
  "env.REDIS_SENTINEL_PASSWORD",
];

export interface LoggerOptions {
  level?: string;
  /** Secret values that must never be printed, whatever field they appear in. */
  secrets?: readonly string[];
  destination?: DestinationStream;
}

/**
 * A pino logger that censors known secret fields by path, and any known secret value by content
 * (a token pasted into an error message is still a token), at any length. pino writes JSON, so each
 * secret is looked for as JSON writes it (a `"` or `\` in it escaped), in each line as it is written.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const secrets = (options.secrets ?? []).filter((s) => s.length > 0);
  const scrub = (line: string): string => redactSecretsInJson(line, secrets);
  return pino(
    {
      level: options.level ?? "info",
      base: { app: "modelswap" },
      redact: { paths: REDACT_PATHS, censor: "[redacted]" },
      timestamp: pino.stdTimeFunctions.isoTime,
      hooks:
        secrets.length === 0
          ? {}
          : {
              streamWrite: scrub,
            },
    },
    options.destination ?? pino.destination(2),
  );
}

/**
 * The ways a secret can be written in a text once it was escaped on the way there: as it is;
 * entity-escaped (`&` `<` `>` as `&amp;` `&lt;` `&gt;`, which is how Slack's mrkdwn, and HTML, write them);
 * and with backticks turned into ˋ, as an echo of untrusted text in Slack does. Redaction matches every
 * one of them, so it no longer matters whether it runs before or after the escaping.
 */
export function secretVariants(secret: string): string[] {
  const entities = secret.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
  return unique([secret, entities, secret.replaceAll("`", "ˋ"), entities.replaceAll("`", "ˋ")]);
}

/**
 * Replaces every occurrence of every secret (in each of its variants) with `[redacted]`, and a secret
 * cut short by a message's truncation mark (`…`): a long error shortened for Slack still carries most
 * of the secret.
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  return redactForms(text, secrets.flatMap(secretVariants));
}

/**
 * Secrets in JSON text: matched as they are written there (quotes, backslashes and control characters
 * escaped), also JSON inside a JSON string (escaped twice).
 */
export function redactSecretsInJson(json: string, secrets: readonly string[]): string {
  return redactForms(
    json,
    secrets.flatMap(secretVariants).flatMap((form) => {
      const once = JSON.stringify(form).slice(1, -1);
      return [once, JSON.stringify(once).slice(1, -1)];
    }),
  );
}

/** Every string inside a value (objects and arrays walked, nothing else changed) redacted. */
export function redactStrings<T>(value: T, secrets: readonly string[]): T {
  if (secrets.length === 0) return value;
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") return redactSecrets(v, secrets);
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v === "object" && v !== null && Object.getPrototypeOf(v) === Object.prototype) {
      return Object.fromEntries(Object.entries(v).map(([k, item]) => [k, walk(item)]));
    }
    return v;
  };
  return walk(value) as T;
}

/** Longest forms first, so a form that contains another is replaced whole. */
function redactForms(text: string, forms: readonly string[]): string {
  let out = text;
  for (const form of unique(forms).sort((a, b) => b.length - a.length)) {
    if (form.length === 0) continue;
    if (out.includes(form)) out = out.split(form).join("[redacted]");
    if (out.includes("…")) out = redactCutSecret(out, form);
  }
  return out;
}

function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}

/** The shortest start of a secret that counts as the secret when a text is cut right after it. */
const MIN_CUT_SECRET = 8;

function redactCutSecret(text: string, secret: string): string {
  let out = text;
  let at = out.indexOf("…");
  while (at >= 0) {
    let k = Math.min(secret.length - 1, at);
    while (k >= MIN_CUT_SECRET && out.slice(at - k, at) !== secret.slice(0, k)) k -= 1;
    if (k >= MIN_CUT_SECRET) {
      out = `${out.slice(0, at - k)}[redacted]${out.slice(at)}`;
      at = at - k + "[redacted]".length;
    }
    at = out.indexOf("…", at + 1);
  }
  return out;
}
