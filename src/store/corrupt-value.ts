import type { z } from "zod";
import { CodedError, describeError } from "../errors.ts";
import { createLogger, type Logger } from "../log.ts";

/** A stored record that does not match its schema: reported with what is wrong, never used. */
export function invalidRecord(what: string, id: string, error: z.ZodError): CodedError {
  const first = error.issues
    .slice(0, 3)
    .map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`)
    .join("; ");
  return new CodedError(
    "STORE_RECORD_INVALID",
    `the ${what} ${id} in Redis does not match its schema (${first})`,
    "it was written by another modelswap version or changed by hand: run every process on one version (docs/redis.md, Upgrades); the record is left as it is",
  );
}

let fallback: Logger | undefined;

/** The log of a store part given none (a Store made without `log`): corrupt values still get a line. */
export function storeLog(log: Logger | undefined): Logger {
  if (log !== undefined) return log;
  fallback ??= createLogger().child({ name: "store" });
  return fallback;
}

/**
 * A value in Redis that does not match its schema, read where one bad value must not stop the rest (a
 * metrics scrape, the audit trail): logged with STORE_RECORD_INVALID and what is wrong, and left out —
 * never used as if it were right.
 */
export function reportCorrupt(log: Logger, what: string, id: string, error: z.ZodError): void {
  log.warn(
    { code: "STORE_RECORD_INVALID", what, id, err: describeError(invalidRecord(what, id, error)) },
    `the ${what} ${id} in Redis does not match its schema; it is left out`,
  );
}
