import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { EmulatorState } from "./emulator-state.ts";
import { decodeJsonFields, parseApiArgs, readBody, sendJson, sendText, uploadBytes } from "./http-body.ts";
import { applyResponsePost } from "./response-url.ts";
import type { ApiCall, Block, JsonObject, ResponseUrlPost } from "./types.ts";
import { validateBlocks } from "./validate-blocks.ts";
import { handleApiCall, withBlockIds } from "./web-api.ts";

/**
 * The emulator's server side, as slack.com: the Web API (`/api/<method>`, with the fault switches'
 * delays and forced failures, then web-api.ts), the `response_url`s it hands out (`/response/<id>`),
 * the upload URLs of files.getUploadURLExternal (`/upload/v1/<id>`), `url_private` downloads
 * (`/files/<id>/…`) and the Socket Mode WebSocket upgrade.
 */

/** A response_url accepts 5 posts within 30 minutes (Slack's documented limits). */
const RESPONSE_URL_MAX_USES = 5;
const RESPONSE_URL_TTL_MS = 30 * 60 * 1000;

/** The node:http request listener: the Web API, response_urls, file uploads and downloads. */
export async function handleRequest(
  s: EmulatorState,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const url = new URL(req.url ?? "/", s.url);
  try {
    if (url.pathname.startsWith("/api/")) {
      await handleApi(s, req, res, url);
    } else if (url.pathname.startsWith("/response/") && req.method === "POST") {
      await handleResponseUrl(s, req, res, decodeURIComponent(url.pathname.slice("/response/".length)));
    } else if (url.pathname.startsWith("/upload/v1/") && req.method === "POST") {
      await handleUpload(s, req, res, url.pathname.slice("/upload/v1/".length));
    } else if (url.pathname.startsWith("/files/") && req.method === "GET") {
      handleFileDownload(s, req, res, url.pathname.split("/")[2] ?? "");
    } else {
      sendText(res, 404, "not found");
    }
  } catch (error) {
    if (!res.headersSent) sendJson(res, 500, { ok: false, error: "internal_error", detail: String(error) });
  }
}

async function handleApi(
  s: EmulatorState,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<void> {
  const method = url.pathname.slice("/api/".length);
  const raw = await readBody(req);
  let parsed: Awaited<ReturnType<typeof parseApiArgs>>;
  try {
    parsed = await parseApiArgs(req.headers["content-type"], raw, url.searchParams);
  } catch {
    recordCall(s, method, {}, 200, false, "invalid_json");
    sendJson(res, 200, { ok: false, error: "invalid_json" });
    return;
  }
  const delay = s.faults.delayFor(method);
  if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
  const answer = handleApiCall(
    s.ctx,
    { method, args: parsed.args, isJson: parsed.isJson, authorization: req.headers.authorization },
    s.faults,
  );
  const ok = answer.body.ok === true;
  const error = typeof answer.body.error === "string" ? answer.body.error : undefined;
  if (answer.status === 429) s.rateLimited += 1;
  const { token: _token, ...args } = parsed.args;
  recordCall(s, method, decodeJsonFields(args), answer.status, ok, error);
  sendJson(res, answer.status, answer.body, answer.headers);
}

/** Records one Web API call in the call log (`calls()`). */
function recordCall(
  s: EmulatorState,
  method: string,
  args: JsonObject,
  status: number,
  ok: boolean,
  error: string | undefined,
): void {
  const call: ApiCall = { method, args, at: Date.now(), status, ok };
  if (error !== undefined) call.error = error;
  s.workspace.calls.push(call);
}

async function handleResponseUrl(
  s: EmulatorState,
  req: IncomingMessage,
  res: ServerResponse,
  id: string,
): Promise<void> {
  const raw = (await readBody(req)).toString("utf8");
  let body: JsonObject = {};
  try {
    const type = (req.headers["content-type"] ?? "").split(";")[0]?.trim();
    if (type === "application/x-www-form-urlencoded") {
      body = JSON.parse(new URLSearchParams(raw).get("payload") ?? "{}") as JsonObject;
    } else {
      body = JSON.parse(raw) as JsonObject;
    }
  } catch {
    sendJson(res, 400, { ok: false, error: "invalid_payload" });
    return;
  }
  const state = s.workspace.responseUrls.get(id);
  const post: ResponseUrlPost = {
    id,
    at: Date.now(),
    body,
    response_type: body.response_type === "in_channel" ? "in_channel" : "ephemeral",
    replace_original: body.replace_original === true || body.replace_original === "true",
    delete_original: body.delete_original === true || body.delete_original === "true",
    ok: true,
  };
  if (typeof body.text === "string") post.text = body.text;
  if (Array.isArray(body.blocks)) post.blocks = body.blocks as Block[];
  const fail = (status: number, error: string): void => {
    post.ok = false;
    post.error = error;
    s.responsePosts.push(post);
    sendJson(res, status, { ok: false, error });
  };
  if (state === undefined) return fail(404, "invalid_url");
  if (Date.now() - state.createdAt > RESPONSE_URL_TTL_MS) return fail(404, "expired_url");
  if (state.uses >= RESPONSE_URL_MAX_USES) return fail(404, "used_url");
  if (post.blocks !== undefined) {
    const errors = validateBlocks(post.blocks);
    if (errors.length > 0) return fail(400, "invalid_blocks");
    post.blocks = withBlockIds(post.blocks);
  }
  if (!post.delete_original && (post.text ?? "") === "" && post.blocks === undefined) {
    return fail(400, "no_text");
  }
  state.uses += 1;
  s.responsePosts.push(post);
  applyResponsePost(s.workspace, state, post);
  sendJson(res, 200, { ok: true });
}

async function handleUpload(
  s: EmulatorState,
  req: IncomingMessage,
  res: ServerResponse,
  fileId: string,
): Promise<void> {
  const upload = s.workspace.uploads.get(fileId);
  const raw = await readBody(req);
  if (upload === undefined) {
    sendText(res, 404, "Not Found");
    return;
  }
  const bytes = await uploadBytes(req.headers["content-type"], raw);
  if (bytes.length !== upload.length) {
    s.workspace.warn(
      "files.upload",
      `upload_length_mismatch: ${fileId} declared ${upload.length}, got ${bytes.length}`,
    );
  }
  upload.file.content = bytes;
  upload.file.size = bytes.length;
  upload.uploaded = true;
  sendText(res, 200, `OK - ${bytes.length}`);
}

function handleFileDownload(
  s: EmulatorState,
  req: IncomingMessage,
  res: ServerResponse,
  fileId: string,
): void {
  const token = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? "")?.[1];
  const upload = s.workspace.uploads.get(fileId);
  if (token === undefined || !s.ctx.validTokens.has(token)) {
    sendText(res, 403, "forbidden");
    return;
  }
  if (upload?.file.content === undefined) {
    sendText(res, 404, "not found");
    return;
  }
  res.writeHead(200, {
    "content-type": upload.file.mimetype,
    "content-length": upload.file.content.length,
  });
  res.end(upload.file.content);
}

/** The node:http `upgrade` listener: Socket Mode connections (`/link/?ticket=…`). */
export function handleUpgrade(s: EmulatorState, req: IncomingMessage, socket: Duplex, head: Buffer): void {
  if (s.socketLink === undefined) {
    socket.end("HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
    return;
  }
  s.socketLink.handleUpgrade(req, socket, head);
}
