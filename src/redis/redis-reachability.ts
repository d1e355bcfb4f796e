import { duration } from "../format-duration.ts";
import type { Logger } from "../log.ts";
import type { RedisClient } from "./redis-client.ts";

export interface RedisReachabilityOptions {
  /** Where Redis is, for the lines (describeRedis: never a password). */
  where?: string;
  /** While Redis stays away, one summary line per this many ms. @defaultValue 60 000 */
  summaryEveryMs?: number;
  now?: () => number;
}

/**
 * Tells Redis being away once per change of state, for every connection and worker of a process: a
 * warning with the error when it becomes unreachable (`REDIS_UNREACHABLE`), a summary at most every
 * `summaryEveryMs` while it stays away (`REDIS_STILL_UNREACHABLE`: how long, how many errors), and one
 * line when every watched connection is ready again (`REDIS_REACHABLE`). Each connection reconnects every
 * 2 s and each BullMQ worker reports each attempt, which made some 150 warnings in 20 s of outage.
 *
 * Whether Redis is away is read from the watched connections (one is not ready), not from the errors,
 * which only say why: an error while all of them are ready is a worker's own error (a script refused, a
 * lost lock) and is logged as it is, or a late echo of the outage (a connection error) and goes to debug.
 */
export class RedisReachability {
  private readonly connections: RedisClient[] = [];
  private readonly where: string | undefined;
  private readonly summaryEveryMs: number;
  private readonly now: () => number;
  private down: { since: number; errors: number; last: string; source: string } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly log: Logger,
    options: RedisReachabilityOptions = {},
  ) {
    this.where = options.where;
    this.summaryEveryMs = options.summaryEveryMs ?? 60_000;
    this.now = options.now ?? Date.now;
  }

  /** Follows a connection: its errors count, its being ready again may end the outage. */
  watch(connection: RedisClient, source: string): this {
    this.connections.push(connection);
    connection.on("error", (error: Error) => this.error(source, error));
    connection.on("ready", () => this.ready());
    // a connection ends only when told to, or when ioredis gives up on it: then nothing reconnects it, and
    // every job that needs it waits for ever; that must not go unsaid
    connection.on("end", () => {
      if (this.stopped) return;
      this.log.error(
        { code: "REDIS_CONNECTION_ENDED", redis: this.where, source },
        `the ${source} to Redis ended and will not reconnect: this process can do no more work. Fix: restart it (modelswap start, or its worker role); if it happens again, the log lines before this one say why`,
      );
    });
    return this;
  }

  /** The process is stopping: its connections end now, as they should. */
  stop(): void {
    this.stopped = true;
    this.close();
  }

  /** An 'error' event of a BullMQ worker (or queue) that uses the watched connections. */
  error(source: string, error: Error): void {
    const text = errorText(error);
    if (this.down !== undefined) {
      this.down.errors += 1;
      this.down.last = text;
      return;
    }
    if (!this.anyNotReady()) {
      if (isConnectionError(error)) this.log.debug({ source, err: text }, `${source}: ${text}`);
      else this.log.warn({ source, err: text }, `${source} error`);
      return;
    }
    this.down = { since: this.now(), errors: 1, last: text, source };
    this.log.warn(
      { code: "REDIS_UNREACHABLE", redis: this.where, source, err: text },
      `Redis is unreachable (${text}): modelswap reconnects by itself, and commands answer that the queue is unavailable meanwhile; a summary follows every ${Math.round(this.summaryEveryMs / 1000)} s while it lasts, and one line once it is back`,
    );
    this.timer = setInterval(() => this.summary(), this.summaryEveryMs);
    this.timer.unref();
  }

  /** Stops the summaries (the process is stopping). */
  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private ready(): void {
    if (this.down === undefined || this.anyNotReady()) return;
    const { since, errors } = this.down;
    this.down = undefined;
    this.close();
    const seconds = Math.round((this.now() - since) / 1000);
    this.log.info(
      { code: "REDIS_REACHABLE", redis: this.where, downSeconds: seconds, errors },
      `Redis is reachable again after ${duration(seconds)} (${errors} errors reported in between)`,
    );
  }

  private summary(): void {
    if (this.down === undefined) return;
    // a connection may have come back without its 'ready' reaching us in the state it needed
    if (!this.anyNotReady()) {
      this.ready();
      return;
    }
    const { since, errors, last } = this.down;
    const seconds = Math.round((this.now() - since) / 1000);
    this.log.warn(
      { code: "REDIS_STILL_UNREACHABLE", redis: this.where, downSeconds: seconds, errors, err: last },
      `Redis still unreachable after ${duration(seconds)}: ${errors} errors reported, the last: ${last}`,
    );
  }

  /** A watched connection that is not ready (one closed on purpose does not count). */
  private anyNotReady(): boolean {
    return this.connections.some((c) => c.status !== "ready" && c.status !== "end");
  }
}

/** The errors a lost or refused connection gives (BullMQ's own test looks at the same words). */
export function isConnectionError(error: Error): boolean {
  const code = (error as { code?: unknown }).code;
  const text = errorText(error);
  return (
    (typeof code === "string" && CONNECTION_CODES.has(code)) ||
    /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|Connection is closed|Stream isn't writeable|max retries per request/i.test(
      text,
    )
  );
}

const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

/** An error's message; an AggregateError (every address of a name refused) has none of its own. */
function errorText(error: Error): string {
  if (error.message !== "") return error.message;
  if (error instanceof AggregateError) return error.errors.map((e) => errorText(e as Error)).join("; ");
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" ? code : error.name;
}
