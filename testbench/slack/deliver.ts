import { signSlackRequest } from "./sign-slack-request.ts";
import type { DeliveryResult, SignedRequest } from "./types.ts";

export interface DeliveryOptions {
  endpoint: string;
  body: string;
  contentType: "application/x-www-form-urlencoded" | "application/json";
  signingSecret: string;
  /** Unix seconds for x-slack-request-timestamp; default now. */
  timestamp?: number;
  deadlineMs: number;
  headers?: Record<string, string>;
}

/**
 * POSTs one signed request to the bot the way Slack does: exact content type (Bolt compares it
 * literally), `x-slack-request-timestamp`, `x-slack-signature`, Slack's user agent, and a deadline after
 * which Slack stops waiting for the acknowledgement.
 */
export async function deliver(opts: DeliveryOptions): Promise<DeliveryResult> {
  const timestamp = opts.timestamp ?? Math.floor(Date.now() / 1000);
  return await send(
    {
      endpoint: opts.endpoint,
      headers: {
        "content-type": opts.contentType,
        "user-agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
        accept: "application/json,*/*",
        "x-slack-request-timestamp": String(timestamp),
        "x-slack-signature": signSlackRequest(opts.signingSecret, timestamp, opts.body),
        ...(opts.headers ?? {}),
      },
      body: opts.body,
    },
    opts.deadlineMs,
  );
}

/**
 * POSTs a signed request exactly as given (headers and body untouched): a delivery, or the replay of a
 * captured one. The result carries the request, so a test can capture it and send it again.
 */
export async function send(request: SignedRequest, deadlineMs: number): Promise<DeliveryResult> {
  const started = performance.now();
  try {
    const response = await fetch(request.endpoint, {
      method: "POST",
      headers: request.headers,
      body: request.body,
      signal: AbortSignal.timeout(deadlineMs),
    });
    const body = await response.text();
    return { status: response.status, body, ackMs: performance.now() - started, timedOut: false, request };
  } catch (error) {
    const ackMs = performance.now() - started;
    const name = error instanceof Error ? error.name : "";
    if (name === "TimeoutError" || name === "AbortError") {
      return { status: 0, body: "", ackMs, timedOut: true, request };
    }
    const cause =
      error instanceof Error && error.cause instanceof Error ? error.cause.message : String(error);
    return { status: 0, body: "", ackMs, timedOut: false, networkError: cause, request };
  }
}
