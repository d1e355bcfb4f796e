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
 * (a token pasted into an error message is still a token).
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const secrets = (options.secrets ?? []).filter((s) => s.length >= 8);
  const scrub = (text: string): string => redactSecrets(text, secrets);
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
 * Replaces every occurrence of every secret with `[redacted]`, and a secret cut short by a message's
 * truncation mark (`…`): a long error shortened for Slack still carries most of the secret.
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length === 0) continue;
    if (out.includes(secret)) out = out.split(secret).join("[redacted]");
    if (out.includes("…")) out = redactCutSecret(out, secret);
  }
  return out;
}

/** Secrets in JSON text: matched as they are written there (quotes and backslashes escaped). */
export function redactSecretsInJson(json: string, secrets: readonly string[]): string {
  return redactSecrets(
    json,
    secrets.map((s) => JSON.stringify(s).slice(1, -1)),
  );
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
