import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { defaultBodyLimit, HTTPModuleFunctions, type HTTPReceiver, verifySlackRequest } from "@slack/bolt";
import { describeError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { SignedRequests } from "../store/signed-requests.ts";
import { eventIdOf } from "./event-deliveries.ts";

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
 * Slack's retry numbers: it sends an Events API event again, under the same `event_id`, when the Request
 * URL did not acknowledge it in 3 seconds (or answered an error), up to 3 times (nearly at once, after a
 * minute, after 5 minutes), with `X-Slack-Retry-Num: 1`..`3` and `X-Slack-Retry-Reason`
 * (https://docs.slack.dev/apis/events-api/using-http-request-urls, "Retries"). Slash commands and
 * interactions (button clicks) are never retried: an unacknowledged one is an error the user sees
 * (https://docs.slack.dev/interactivity/implementing-slash-commands). Neither header is signed: the
 * signature covers `v0:<timestamp>:<body>` only (https://docs.slack.dev/authentication/verifying-requests-from-slack),
 * so whoever captured a request can add them.
 */
const SLACK_RETRY_NUM = /^[1-3]$/;

/**
 * Puts a check in front of Bolt's HTTP receiver: a signed request is accepted once. Bolt checks the
 * signature and refuses timestamps more than five minutes old, but takes the same signed bytes again and
 * again within those five minutes, and any timestamp in the future. Here, before Bolt sees the request,
 * its signature is verified (with Bolt's own function), a timestamp more than five minutes ahead is
 * refused, and `v0:<timestamp>:<signature>` is recorded in Redis (SET NX) until its window has closed: a
 * second delivery of it is answered 401 and goes no further.
 *
 * One exception, for Slack's retries of an event (above), should Slack send a retry under the signature
 * of the first delivery: an Events API delivery (a JSON `event_callback`, read as Bolt reads it) with an
 * event id the event dedupe keys, and `X-Slack-Retry-Num` 1 to 3, is recorded under its signature and that
 * number. Being unsigned, the number buys a captured event at most three more passes through the guard, and
 * each one meets the event-id dedupe (handleEachEventOnce), which handles an event once. For anything else
 * — a slash command, a click, an event the dedupe cannot key, a number Slack never sends — the header
 * changes nothing, and the refusal says so. When Redis cannot record the request it is refused (503), never
 * let through unremembered. Socket Mode needs none of this: nothing is signed, the connection is the bot's
 * own.
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
  const retryNum = header(req, "x-slack-retry-num");
  // what the request is, read once its signature holds (an unsigned body is not parsed)
  let delivery: Delivery | undefined;
  /** Logs why (`refused` is the reason's code, the fields say what came) and answers 401. */
  const refuse = (refused: Refusal, why: string) => {
    options.log.warn(
      {
        refused,
        ...(delivery !== undefined ? { kind: delivery.kind } : {}),
        ...(delivery?.eventId !== undefined ? { eventId: delivery.eventId } : {}),
        ...(retryNum !== undefined ? { retryNum: retryNum.slice(0, 16) } : {}),
        timestamp: Number.isFinite(timestamp) ? timestamp : undefined,
      },
      `Slack request refused: ${why}`,
    );
    respond(res, 401);
    return false;
  };
  if (signature === undefined || !Number.isInteger(timestamp)) return refuse("unsigned", "not signed");
  try {
    verifySlackRequest({
      signingSecret: options.signingSecret,
      body: raw,
      headers: { "x-slack-signature": signature, "x-slack-request-timestamp": timestamp },
      nowMilliseconds: nowMs,
    });
  } catch (error) {
    return refuse("signature", (error as Error).message);
  }
  const nowSeconds = Math.floor(nowMs / 1000);
  if (timestamp > nowSeconds + SIGNATURE_WINDOW_SECONDS) {
    return refuse(
      "future",
      `its timestamp is more than 5 minutes ahead of this machine's clock (${timestamp - nowSeconds} s): check the clock (NTP) if Slack's requests are refused like this`,
    );
  }
  delivery = deliveryOf(req, raw);
  const slackRetry = retryOf(delivery, retryNum);
  const key = slackRetry.counts ? `${signature}:retry${retryNum}` : signature;
  const keep = timestamp + SIGNATURE_WINDOW_SECONDS - nowSeconds + MARGIN_SECONDS;
  if (!(await options.requests.firstUse(timestamp, key, keep))) {
    const what = slackRetry.counts
      ? `this retry of the event (X-Slack-Retry-Num ${retryNum}) was delivered before`
      : `it was delivered before (the same signature)${slackRetry.ignored === undefined ? "" : `, and its X-Slack-Retry-Num ${(retryNum ?? "").slice(0, 16)} does not make it new: ${slackRetry.ignored}`}`;
    return refuse(
      "replay",
      `${what}. A replayed request is never handled twice; if nobody resent it on purpose, someone who captured it did: check who can read the requests to the Request URL (proxy logs, packet captures)`,
    );
  }
  return true;
}

/** Why a request was refused, for the log's `refused` field. */
type Refusal = "unsigned" | "signature" | "future" | "replay";

/** What a request is, read from its body the way Bolt will read it (the content type picks the parser). */
interface Delivery {
  kind: "event" | "slash command" | "interaction" | "other";
  /** An event's id, when the event dedupe can key it. */
  eventId?: string;
}

function deliveryOf(req: IncomingMessage, raw: string): Delivery {
  try {
    // as Bolt's parseHTTPRequestBody: a form (a command, or an interaction's `payload`), else JSON
    if (req.headers["content-type"] === "application/x-www-form-urlencoded") {
      const form = new URLSearchParams(raw);
      if (form.has("payload")) return { kind: "interaction" };
      return { kind: form.has("command") ? "slash command" : "other" };
    }
    const body: unknown = JSON.parse(raw);
    if ((body as { type?: unknown } | null)?.type !== "event_callback") return { kind: "other" };
    const eventId = eventIdOf(body);
    return eventId === undefined ? { kind: "event" } : { kind: "event", eventId };
  } catch {
    return { kind: "other" }; // Bolt answers what it cannot parse with 400
  }
}

/**
 * Whether a request's `X-Slack-Retry-Num` makes it a delivery of its own: only for an Events API delivery
 * the event dedupe keys, numbered as Slack numbers its retries. Otherwise why not, for the refusal.
 */
function retryOf(
  delivery: Delivery,
  retryNum: string | undefined,
): { counts: true; ignored?: undefined } | { counts: false; ignored?: string } {
  if (retryNum === undefined) return { counts: false };
  const unsigned = "the header is not signed";
  if (delivery.kind !== "event") {
    return {
      counts: false,
      ignored: `${unsigned}, and Slack retries only Events API deliveries (this is ${delivery.kind === "other" ? "none" : `a ${delivery.kind}`})`,
    };
  }
  if (delivery.eventId === undefined) {
    return {
      counts: false,
      ignored: `${unsigned}, and this event has no event id the event dedupe could key`,
    };
  }
  if (!SLACK_RETRY_NUM.test(retryNum)) {
    return { counts: false, ignored: `${unsigned}, and Slack numbers its retries 1 to 3` };
  }
  return { counts: true };
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
