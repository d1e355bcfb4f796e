/**
 * HTTP client of the simulated `hf`: what huggingface_hub's httpx session does (headers, redirects,
 * timeouts, backoff), with transport failures turned into the same httpx exceptions. Not a command.
 */
import http from "node:http";
import https from "node:https";
import { ConnectError, hfRaiseForStatus, ReadTimeout, RemoteProtocolError } from "./hf-errors.mjs";

export const HF_HUB_VERSION = "1.33.0";
const USER_AGENT = `huggingface-cli/None; hf_hub/${HF_HUB_VERSION}; python/3.12.3; torch/2.9.1`;

const httpAgent = new http.Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
const httpsAgent = new https.Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });

/** Seconds → ms for timeouts (HF_HUB_ETAG_TIMEOUT / HF_HUB_DOWNLOAD_TIMEOUT, default 10 s). */
export function envTimeoutMs(name, fallbackSeconds = 10) {
  const value = Number.parseInt(process.env[name] ?? "", 10);
  return (Number.isFinite(value) && value > 0 ? value : fallbackSeconds) * 1000;
}

/** `build_hf_headers`: user agent and the token. */
export function hfHeaders(token) {
  const headers = { "user-agent": USER_AGENT };
  if (token) headers.authorization = `Bearer ${token}`;
  return headers;
}

function transportError(error, url, gotResponse) {
  const code = error?.code;
  if (error instanceof ReadTimeout || error instanceof ConnectError || error instanceof RemoteProtocolError)
    return error;
  if (code === "ECONNREFUSED") return new ConnectError("[Errno 111] Connection refused");
  if (code === "ENOTFOUND" || code === "EAI_AGAIN")
    return new ConnectError("[Errno -3] Temporary failure in name resolution");
  if (code === "EHOSTUNREACH" || code === "ENETUNREACH")
    return new ConnectError("[Errno 113] No route to host");
  if (!gotResponse) return new RemoteProtocolError("Server disconnected without sending a response.");
  return new RemoteProtocolError(`${error?.message ?? error} (${url})`);
}

/**
 * Sends one request and resolves when the response headers arrived. The body is left unread on
 * `res`. Follows redirects like httpx with `follow_redirects=True` (relative and absolute).
 * @returns {Promise<{status: number, headers: Record<string, string>, url: string, res: http.IncomingMessage}>}
 */
export function send(method, url, { headers = {}, timeoutMs = 10_000, redirects = 10 } = {}) {
  return new Promise((resolve, reject) => {
    let target;
    try {
      target = new URL(url);
    } catch {
      reject(new ConnectError(`Invalid URL: ${url}`));
      return;
    }
    const lib = target.protocol === "https:" ? https : http;
    const req = lib.request(
      target,
      { method, headers, agent: target.protocol === "https:" ? httpsAgent : httpAgent },
      (res) => {
        const status = res.statusCode ?? 0;
        const location = res.headers.location;
        if (status >= 300 && status < 400 && location && redirects > 0) {
          res.resume();
          const next = new URL(location, target).href;
          send(method, next, { headers, timeoutMs, redirects: redirects - 1 }).then(resolve, reject);
          return;
        }
        const flat = {};
        for (const [key, value] of Object.entries(res.headers)) {
          flat[key] = Array.isArray(value) ? value.join(", ") : String(value);
        }
        resolve({ status, headers: flat, url: target.href, res });
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new ReadTimeout("timed out")));
    req.on("error", (error) => reject(transportError(error, url, false)));
    req.end();
  });
}

/** Reads a whole body; a connection cut before Content-Length bytes is httpx's RemoteProtocolError. */
export function readBody(response, timeoutMs = 10_000) {
  return new Promise((resolve, reject) => {
    const { res } = response;
    const chunks = [];
    let received = 0;
    res.setTimeout?.(timeoutMs, () => res.destroy(new ReadTimeout("timed out")));
    res.on("data", (chunk) => {
      chunks.push(chunk);
      received += chunk.length;
    });
    res.on("error", () => undefined);
    res.on("close", () => {
      if (res.complete) resolve(Buffer.concat(chunks));
      else {
        const expected = response.headers["content-length"];
        reject(
          new RemoteProtocolError(
            `peer closed connection without sending complete message body (received ${received} bytes, expected ${expected ?? "?"})`,
          ),
        );
      }
    });
  });
}

/** One request with the body read; raises like `hf_raise_for_status` when `raise` is set. */
export async function request(method, url, { headers = {}, timeoutMs = 10_000, raise = true } = {}) {
  const response = await send(method, url, { headers, timeoutMs });
  const body = method === "HEAD" ? Buffer.alloc(0) : await readBody(response, timeoutMs);
  const full = { status: response.status, headers: response.headers, url: response.url, body };
  if (raise) hfRaiseForStatus(full);
  return full;
}

/** `Link: <url>; rel="next"` → url. */
export function nextLink(headers) {
  const link = headers.link;
  if (!link) return undefined;
  for (const part of link.split(",")) {
    const match = /<([^>]+)>\s*;\s*rel="?next"?/.exec(part);
    if (match) return match[1];
  }
  return undefined;
}
