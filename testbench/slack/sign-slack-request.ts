import { createHmac } from "node:crypto";

/**
 * Slack's request signature: `v0=` + hex HMAC-SHA256 over `v0:{timestamp}:{rawBody}` with the app's
 * signing secret. Sent as `x-slack-signature` beside `x-slack-request-timestamp` (unix seconds).
 */
export function signSlackRequest(secret: string, timestamp: number, rawBody: string): string {
  const hmac = createHmac("sha256", secret);
  hmac.update(`v0:${timestamp}:${rawBody}`);
  return `v0=${hmac.digest("hex")}`;
}
