import { type Logger as BoltLogger, LogLevel } from "@slack/bolt";
import type { Logger } from "../log.ts";

/** Bolt's logger interface over our pino logger, so Bolt's lines are structured and redacted too. */
export function boltLogger(log: Logger): BoltLogger {
  const child = log.child({ name: "bolt" });
  let level = LogLevel.INFO;
  const text = (msg: unknown[]) => msg.map((m) => (typeof m === "string" ? m : JSON.stringify(m))).join(" ");
  return {
    debug: (...msg) => child.debug(text(msg)),
    info: (...msg) => child.info(text(msg)),
    warn: (...msg) => child.warn(text(msg)),
    error: (...msg) => child.error(text(msg)),
    setLevel: (next) => {
      level = next;
    },
    getLevel: () => level,
    setName: () => undefined,
  };
}
