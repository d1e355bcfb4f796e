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

/** Replaces every occurrence of every secret with `[redacted]`. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length > 0 && out.includes(secret)) out = out.split(secret).join("[redacted]");
  }
  return out;
}
