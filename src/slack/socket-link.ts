import type { App } from "@slack/bolt";
import { SocketModeReceiver } from "@slack/bolt";
import { duration } from "../format-duration.ts";
import type { Logger } from "../log.ts";
import { APP_TOKEN_FIX, slackErrorWord } from "./slack-error-word.ts";

/*
 * The Socket Mode connection, watched. In Socket Mode every command, reaction and click comes over one
 * WebSocket the bot opened itself; while it is down the bot is deaf, whatever else works. The SDK
 * reconnects on its own after Slack refreshes or drops the link, but it gives up for good when opening a
 * new one fails with a network error or an HTTP error (SocketModeClient.retrieveWSSURL: WebAPIRequestError
 * and WebAPIHTTPError are "not recoverable") — and its only words are "http request failed fetch failed".
 * So: /healthz says the bot is deaf once the link has been down past DEAF_AFTER_MS; the log says so once,
 * with the method, Slack's answer and the fix, then every minute while it lasts, then how long it lasted;
 * and when the SDK has stopped trying, the link is opened again here, with a growing pause.
 */

/** A link down this long is more than Slack's refresh (the SDK reconnects within about 5 s). */
export const DEAF_AFTER_MS = 30_000;
/** While the link stays down: one summary line this often. */
const SUMMARY_EVERY_MS = 60_000;
/** Reopening a link the SDK gave up on: the first pause, doubling to the last. */
const REOPEN_FIRST_MS = 5_000;
const REOPEN_MAX_MS = 60_000;

/** What the Socket Mode link is now, for /healthz. */
export interface SlackLink {
  /** Why the bot does not hear Slack, once the link has been down past DEAF_AFTER_MS; else undefined. */
  problem(nowMs?: number): string | undefined;
  stop(): void;
}

/** The SDK's client inside Bolt's Socket Mode receiver, as far as this watch uses it. */
interface SocketClient {
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  start(): Promise<unknown>;
  // the SDK's own state: a reconnect scheduled, or the client shut down
  reconnectionTimer?: unknown;
  shuttingDown?: boolean;
}

/** Watches the app's Socket Mode link; undefined in HTTP mode (Slack comes to the bot there). */
export function watchSocketLink(
  app: App,
  log: Logger,
  clock: () => number = Date.now,
): SlackLink | undefined {
  const receiver = (app as unknown as { receiver?: unknown }).receiver;
  if (!(receiver instanceof SocketModeReceiver)) return undefined;
  const socket = receiver.client as unknown as SocketClient;
  let connected = true; // startSlackApp resolved: Slack said hello
  let downSince: number | undefined;
  let lastError: string | undefined;
  let summary: NodeJS.Timeout | undefined;
  let reopen: NodeJS.Timeout | undefined;
  let reopenMs = REOPEN_FIRST_MS;
  let stopped = false;

  const down = (why: string | undefined) => {
    if (why !== undefined) lastError = why;
    if (!connected) return;
    connected = false;
    downSince = clock();
    log.warn(
      { code: "SLACK_SOCKET_DOWN", ...(lastError === undefined ? {} : { error: lastError }) },
      `the Socket Mode connection to Slack is down${lastError === undefined ? "" : ` (${lastError})`}: commands, reactions and clicks do not reach the bot until it is open again; it reconnects by itself. Fix, if it lasts: ${fixFor(lastError)}`,
    );
    summary = setInterval(() => {
      log.warn(
        {
          code: "SLACK_SOCKET_DOWN",
          downSeconds: Math.round((clock() - (downSince ?? clock())) / 1000),
          error: lastError,
        },
        `the Socket Mode connection to Slack is still down after ${duration((clock() - (downSince ?? clock())) / 1000)}${lastError === undefined ? "" : ` (last: ${lastError})`}. Fix: ${fixFor(lastError)}`,
      );
    }, SUMMARY_EVERY_MS);
    summary.unref();
  };

  /**
   * The SDK stopped trying (its start() failed for good, caught below): open the link again ourselves,
   * after a pause. While it reconnects on its own, this stays out of its way.
   */
  const scheduleReopen = () => {
    if (reopen !== undefined || stopped) return;
    reopen = setTimeout(() => {
      reopen = undefined;
      if (connected || stopped || socket.shuttingDown === true) return;
      if (socket.reconnectionTimer !== undefined) {
        scheduleReopen();
        return;
      }
      log.info(
        { afterMs: reopenMs },
        "opening the Socket Mode connection again (the Slack SDK stopped trying)",
      );
      reopenMs = Math.min(REOPEN_MAX_MS, reopenMs * 2);
      void socket.start();
    }, reopenMs);
    reopen.unref();
  };

  // The SDK reconnects by calling start() from a timer and leaves its promise unhandled: an open that
  // fails for good (an HTTP or network error) would end the process. Its failure is caught here instead,
  // said, and the link is opened again after a pause.
  const start = socket.start.bind(socket);
  socket.start = () =>
    start().catch((error: unknown) => {
      failed(error);
      return undefined;
    });

  /** An open of the link failed: said once for each new reason, and tried again after a pause. */
  let told: string | undefined;
  const failed = (error: unknown) => {
    lastError = describe(error);
    down(undefined);
    if (lastError !== told) {
      told = lastError;
      log.warn(
        { code: "SLACK_SOCKET_DOWN", error: lastError },
        `opening the Socket Mode connection to Slack failed (${lastError}); trying again. Fix, if it lasts: ${fixFor(lastError)}`,
      );
    }
    scheduleReopen();
  };

  socket.on("connected", () => {
    const was = downSince;
    told = undefined;
    connected = true;
    downSince = undefined;
    reopenMs = REOPEN_FIRST_MS;
    clearInterval(summary);
    if (was !== undefined)
      log.info(
        { code: "SLACK_SOCKET_UP", downSeconds: Math.round((clock() - was) / 1000) },
        `the Socket Mode connection to Slack is open again after ${duration((clock() - was) / 1000)}`,
      );
  });
  for (const event of ["disconnecting", "disconnected", "reconnecting", "connecting"])
    socket.on(event, () => {
      if (!stopped) down(undefined);
    });
  socket.on("close", () => {
    if (!stopped) down("the WebSocket was closed");
  });
  // an error says why the link went (or will go) down; the close that follows marks it down
  socket.on("error", (error: unknown) => {
    lastError = describe(error);
  });
  return {
    problem(nowMs = clock()) {
      if (connected || downSince === undefined || nowMs - downSince < DEAF_AFTER_MS) return undefined;
      const seconds = Math.round((nowMs - downSince) / 1000);
      return `Slack's Socket Mode connection has been down for ${duration(seconds)}${lastError === undefined ? "" : ` (${lastError})`}: commands, reactions and clicks do not reach this bot. ${fixFor(lastError)}`;
    },
    stop() {
      stopped = true;
      clearInterval(summary);
      clearTimeout(reopen);
    },
  };
}

/** Why opening the link failed, naming the method: Slack's word, the HTTP status, or the network error. */
function describe(error: unknown): string {
  const word = slackErrorWord(error);
  if (word !== undefined) return `apps.connections.open: ${word}`;
  const http = error as { statusCode?: unknown; body?: { error?: unknown } } | undefined;
  if (typeof http?.statusCode === "number") {
    const said = typeof http.body?.error === "string" ? ` (${http.body.error})` : "";
    return `apps.connections.open: HTTP ${http.statusCode}${said}`;
  }
  const cause = error as { original?: { message?: unknown }; cause?: { message?: unknown } } | undefined;
  const deeper = cause?.original?.message ?? cause?.cause?.message;
  const message = error instanceof Error ? error.message : String(error);
  const text = typeof deeper === "string" && deeper !== "" ? `${message}: ${deeper}` : message;
  return `apps.connections.open: ${text === "" ? "no reason given" : text}`;
}

function fixFor(error: string | undefined): string {
  if (error !== undefined && /invalid_auth|not_authed|token_revoked|not_allowed_token_type/.test(error))
    return APP_TOKEN_FIX;
  return "check that this machine reaches Slack over HTTPS and WSS (a proxy or firewall in between), and Slack's status page";
}
