import { Writable } from "node:stream";
import { createLogger, type Logger } from "../../src/log.ts";

/**
 * A real pino logger (the project's createLogger, level debug) whose lines are kept in memory: `lines()`
 * parses each one as it was written, for tests that assert what the bot logged.
 */
export function captureLog<Line = Record<string, unknown>>(): { log: Logger; lines: () => Line[] } {
  const out: string[] = [];
  const log = createLogger({
    level: "debug",
    destination: new Writable({
      write(chunk, _encoding, done) {
        out.push(...String(chunk).split("\n").filter(Boolean));
        done();
      },
    }),
  });
  return { log, lines: () => out.map((l) => JSON.parse(l) as Line) };
}
