import type { IncomingMessage, ServerResponse } from "node:http";
import type { JsonObject } from "./types.ts";

export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks);
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

export function sendText(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, {
    "content-type": "text/plain; charset=utf-8",
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
}

export interface ParsedArgs {
  args: JsonObject;
  /** The body was JSON (Slack then only accepts the token in the Authorization header). */
  isJson: boolean;
  /** Binary parts of a multipart body, by field name. */
  binary: Map<string, Buffer>;
}

/** Web API arguments from a form, JSON or multipart body plus the query string, as Slack accepts them. */
export async function parseApiArgs(
  contentType: string | undefined,
  raw: Buffer,
  query: URLSearchParams,
): Promise<ParsedArgs> {
  const args: JsonObject = {};
  const binary = new Map<string, Buffer>();
  for (const [key, value] of query) args[key] = value;
  const type = (contentType ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  let isJson = false;
  if (raw.length > 0) {
    if (type === "application/json") {
      isJson = true;
      const parsed: unknown = JSON.parse(raw.toString("utf8"));
      if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) {
        Object.assign(args, parsed as JsonObject);
      }
    } else if (type === "multipart/form-data") {
      const form = await new Response(new Uint8Array(raw), {
        headers: { "content-type": contentType ?? "" },
      }).formData();
      for (const [key, value] of form) {
        if (typeof value === "string") args[key] = value;
        else binary.set(key, Buffer.from(await value.arrayBuffer()));
      }
    } else {
      for (const [key, value] of new URLSearchParams(raw.toString("utf8"))) args[key] = value;
    }
  }
  return { args, isJson, binary };
}

/** The bytes of an upload: the first file part of a multipart body, else the raw body. */
export async function uploadBytes(contentType: string | undefined, raw: Buffer): Promise<Buffer> {
  const type = (contentType ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  if (type !== "multipart/form-data") return raw;
  const form = await new Response(new Uint8Array(raw), {
    headers: { "content-type": contentType ?? "" },
  }).formData();
  for (const [, value] of form) {
    if (typeof value !== "string") return Buffer.from(await value.arrayBuffer());
  }
  for (const [, value] of form) return Buffer.from(String(value));
  return Buffer.alloc(0);
}

const JSON_FIELDS = ["blocks", "attachments", "files", "metadata"];

/**
 * WebClient form-encodes objects as JSON strings; decode the fields Slack treats as JSON so recorded
 * arguments can be inspected. Unparseable values stay strings (the handler reports the error).
 */
export function decodeJsonFields(args: JsonObject): JsonObject {
  const out: JsonObject = { ...args };
  for (const key of JSON_FIELDS) {
    const value = out[key];
    if (typeof value === "string") {
      try {
        out[key] = JSON.parse(value);
      } catch {
        // left as the string it was
      }
    }
  }
  return out;
}
