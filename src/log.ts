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
  return redactorFor(textRedactors, secrets, textForms).redact(text);
}

/**
 * Secrets in JSON text: matched as they are written there (quotes, backslashes and control characters
 * escaped), also JSON inside a JSON string (escaped twice).
 */
export function redactSecretsInJson(json: string, secrets: readonly string[]): string {
  return redactorFor(jsonRedactors, secrets, jsonForms).redact(json);
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

/**
 * Censors a fixed set of forms in texts. Built once per set and kept (a logger keeps its own; callers
 * that pass the same secrets array share one), because every line a busy bot writes goes through it:
 * with a thousand hosts' key paths among the secrets, rebuilding and trying each form on each line took
 * 1.8 ms a line, and the monitor's lines alone held the event loop for seconds at a time.
 *
 * Every occurrence of every form is found (forms grouped by length, each window of the text looked up
 * in its length's set), and each run of characters any occurrence covers becomes one `[redacted]`: forms
 * that overlap in a text are censored together, so no part of either is left. Then a form cut short
 * right before a truncation mark `…` (at least MIN_CUT_SECRET characters of it) is censored too.
 */
class FormRedactor {
  private readonly lengths: number[];
  private readonly byLength = new Map<number, Set<string>>();
  /**
   * The first two characters of every form (as `code << 16 | code`), so that a position where no form
   * starts costs one lookup, not a slice per length: a 20 KB swap record took 9 ms a save without it.
   * Undefined when a form is a single character (every position is then tried).
   */
  private readonly starts: Set<number> | undefined = new Set<number>();
  private cutPrefixes: { set: Set<string>; longest: number } | undefined;

  constructor(private readonly forms: readonly string[]) {
    for (const form of forms) {
      if (form.length === 0) continue;
      const set = this.byLength.get(form.length) ?? new Set<string>();
      set.add(form);
      this.byLength.set(form.length, set);
      if (form.length === 1) this.starts = undefined;
      else this.starts?.add(pair(form, 0));
    }
    this.lengths = [...this.byLength.keys()].sort((a, b) => b - a);
  }

  redact(text: string): string {
    const out = this.lengths.length === 0 ? text : this.redactWhole(text);
    return out.includes("…") ? this.redactCut(out) : out;
  }

  private redactWhole(text: string): string {
    // the run of characters covered by occurrences so far: [runStart, runEnd)
    let result = "";
    let last = 0;
    let runStart = -1;
    let runEnd = -1;
    for (let i = 0; i < text.length; i += 1) {
      if (runStart >= 0 && i >= runEnd) {
        result += `${text.slice(last, runStart)}[redacted]`;
        last = runEnd;
        runStart = -1;
      }
      if (this.starts !== undefined && (i + 1 >= text.length || !this.starts.has(pair(text, i)))) continue;
      for (const length of this.lengths) {
        if (i + length > text.length) continue;
        if (!this.byLength.get(length)!.has(text.slice(i, i + length))) continue;
        if (runStart < 0) {
          runStart = i;
          runEnd = i + length;
        } else runEnd = Math.max(runEnd, i + length);
        break; // the longest at this position; shorter ones end inside it
      }
    }
    if (runStart >= 0) {
      result += `${text.slice(last, runStart)}[redacted]`;
      last = runEnd;
    }
    return last === 0 ? text : result + text.slice(last);
  }

  private redactCut(text: string): string {
    this.cutPrefixes ??= this.prefixes();
    const { set, longest } = this.cutPrefixes;
    let out = text;
    let at = out.indexOf("…");
    while (at >= 0) {
      let k = Math.min(longest, at);
      while (k >= MIN_CUT_SECRET && !set.has(out.slice(at - k, at))) k -= 1;
      if (k >= MIN_CUT_SECRET) {
        out = `${out.slice(0, at - k)}[redacted]${out.slice(at)}`;
        at = at - k + "[redacted]".length;
      }
      at = out.indexOf("…", at + 1);
    }
    return out;
  }

  /** Every start of a form shorter than the form and at least MIN_CUT_SECRET long (built when first needed). */
  private prefixes(): { set: Set<string>; longest: number } {
    const set = new Set<string>();
    let longest = 0;
    for (const form of this.forms) {
      for (let k = MIN_CUT_SECRET; k < form.length; k += 1) set.add(form.slice(0, k));
      longest = Math.max(longest, form.length - 1);
    }
    return { set, longest };
  }
}

/** The two characters of `text` at `i` as one number. */
function pair(text: string, i: number): number {
  return ((text.charCodeAt(i) << 16) | text.charCodeAt(i + 1)) >>> 0;
}

const textRedactors = new WeakMap<readonly string[], FormRedactor>();
const jsonRedactors = new WeakMap<readonly string[], FormRedactor>();

function redactorFor(
  cache: WeakMap<readonly string[], FormRedactor>,
  secrets: readonly string[],
  forms: (secrets: readonly string[]) => string[],
): FormRedactor {
  let redactor = cache.get(secrets);
  if (redactor === undefined) {
    redactor = new FormRedactor(unique(forms(secrets)));
    cache.set(secrets, redactor);
  }
  return redactor;
}

const textForms = (secrets: readonly string[]) => secrets.flatMap(secretVariants);
const jsonForms = (secrets: readonly string[]) =>
  secrets.flatMap(secretVariants).flatMap((form) => {
    const once = JSON.stringify(form).slice(1, -1);
    return [once, JSON.stringify(once).slice(1, -1)];
  });

function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}

/** The shortest start of a secret that counts as the secret when a text is cut right after it. */
const MIN_CUT_SECRET = 8;
