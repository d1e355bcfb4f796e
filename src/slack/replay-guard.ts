import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { defaultBodyLimit, HTTPModuleFunctions, type HTTPReceiver, verifySlackRequest } from "@slack/bolt";
import { describeError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { SignedRequests } from "../store/signed-requests.ts";

/** Bolt refuses timestamps older than this; Slack's docs ask the same of the future (clock skew). */
export const SIGNATURE_WINDOW_SECONDS = 5 * 60;
/** A little longer than the window, so a request is still remembered when its window just closed. */
const MARGIN_SECONDS = 60;

export interface ReplayGuardOptions {
  signingSecret: string;
  requests: SignedRequests;
  log: Logger;
  /** The Request URL's path(s) Bolt answers. */
  endpoints: readonly string[];
  /** Takes the secrets out of a text the guard answers with. */
  redact: (text: string) => string;
  /** Unix milliseconds (tests). */
  now?: () => number;
}

/**
 * Puts a check in front of Bolt's HTTP receiver: a signed request is accepted once. Bolt checks the
 * signature and refuses timestamps more than five minutes old, but takes the same signed bytes again and
 * again within those five minutes, and any timestamp in the future. Here, before Bolt sees the request,
 * its signature is verified (with Bolt's own function), a timestamp more than five minutes ahead is
 * refused, and `v0:<timestamp>:<signature>` is recorded in Redis (SET NX) until its window has closed: a
 * second delivery of it is answered 401 and goes no further. Slack's retries of an event carry the retry
 * number (`X-Slack-Retry-Num`) and count apart; an event delivered twice under one id is still handled
 * once (handleEachEventOnce). When Redis cannot record the request it is refused (503), never let through
 * unremembered. Socket Mode needs none of this: nothing is signed, the connection is the bot's own.
 */
export function guardAgainstReplays(receiver: HTTPReceiver, options: ReplayGuardOptions): void {
  const bolt: RequestListener = receiver.requestListener;
  receiver.requestListener = (req, res) => {
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    if (req.method?.toUpperCase() !== "POST" || !options.endpoints.includes(path)) {
      bolt(req, res);
      return;
    }
    void admit(req, res, options).then(
      (admitted) => {
        if (admitted) bolt(req, res);
      },
      (error: unknown) => {
        options.log.error(
          { err: describeError(error) },
          "could not check a Slack request for replay: refused",
        );
        if (res.headersSent) return;
        // a slash command gets the reason as its answer (the user sees it); Slack retries an event later
        if (isSlashCommand(req)) answer(res, options.redact(`⚠️ ${describeError(error)}`));
        else respond(res, 503);
      },
    );
  };
}

/** Reads and checks one request; answers it and returns false unless it goes on to Bolt. */
async function admit(
  req: IncomingMessage,
  res: ServerResponse,
  options: ReplayGuardOptions,
): Promise<boolean> {
  let raw: string;
  try {
    // buffered once: Bolt takes the buffered body (rawBody) instead of reading the stream again
    raw = (await HTTPModuleFunctions.bufferIncomingMessage(req, defaultBodyLimit)).rawBody.toString();
  } catch (error) {
    const tooLarge = (error as { statusCode?: number }).statusCode === 413;
    respond(res, tooLarge ? 413 : 400);
    return false;
  }
  // Slack's ssl_check is unsigned; Bolt answers it (and strips anything else from it)
  if (isSslCheck(req, raw)) return true;
  const signature = header(req, "x-slack-signature");
  const timestamp = Number(header(req, "x-slack-request-timestamp"));
  const nowMs = (options.now ?? Date.now)();
  const refuse = (why: string) => {
    options.log.warn(
      { timestamp: Number.isFinite(timestamp) ? timestamp : undefined },
      `Slack request refused: ${why}`,
    );
    respond(res, 401);
    return false;
  };
  if (signature === undefined || !Number.isInteger(timestamp)) return refuse("not signed");
  try {
    verifySlackRequest({
      signingSecret: options.signingSecret,
      body: raw,
      headers: { "x-slack-signature": signature, "x-slack-request-timestamp": timestamp },
      nowMilliseconds: nowMs,
    });
  } catch (error) {
    return refuse((error as Error).message);
  }
  const nowSeconds = Math.floor(nowMs / 1000);
  if (timestamp > nowSeconds + SIGNATURE_WINDOW_SECONDS) {
    return refuse(
      `its timestamp is more than 5 minutes ahead of this machine's clock (${timestamp - nowSeconds} s): check the clock (NTP) if Slack's requests are refused like this`,
    );
  }
  const retry = header(req, "x-slack-retry-num");
  const key = /^[1-9]$/.test(retry ?? "") ? `${signature}:retry${retry}` : signature;
  const keep = timestamp + SIGNATURE_WINDOW_SECONDS - nowSeconds + MARGIN_SECONDS;
  if (!(await options.requests.firstUse(timestamp, key, keep))) {
    return refuse("it was delivered before (the same signature): a replayed request is never handled twice");
  }
  return true;
}

function isSlashCommand(req: IncomingMessage): boolean {
  const raw = (req as { rawBody?: Buffer }).rawBody;
  return (
    req.headers["content-type"] === "application/x-www-form-urlencoded" &&
    raw !== undefined &&
    new URLSearchParams(raw.toString()).has("command")
  );
}

function isSslCheck(req: IncomingMessage, raw: string): boolean {
  return (
    req.headers["content-type"] === "application/x-www-form-urlencoded" &&
    new URLSearchParams(raw).get("ssl_check") === "1"
  );
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === "string" ? value : undefined;
}

/** An ephemeral answer to a slash command, in the ack's body (the request itself is not handled). */
function answer(res: ServerResponse, text: string): void {
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify({ response_type: "ephemeral", text }));
}

function respond(res: ServerResponse, status: number): void {
  res.writeHead(status);
  res.end();
}
