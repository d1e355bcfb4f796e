import type { IncomingMessage } from "node:http";
import { z } from "zod";
import type { ApiError } from "./ops-auth.ts";

/** The largest request body the API reads (a swap request is a few hundred bytes). */
const MAX_BODY_BYTES = 16 * 1024;

/** Reads a JSON body and checks it against `schema`: the value, or the 400 error that says what is accepted. */
export async function readJsonBody<T>(
  req: IncomingMessage,
  schema: z.ZodType<T>,
  example: string,
): Promise<{ ok: true; value: T } | { ok: false; error: ApiError }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES)
      return bad(`the request body is over ${MAX_BODY_BYTES} bytes`, `send a JSON object like ${example}`);
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString("utf8");
  let raw: unknown;
  try {
    raw = text.trim() === "" ? {} : JSON.parse(text);
  } catch {
    return bad("the request body is not JSON", `send a JSON object like ${example}`);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue === undefined || issue.path.length === 0 ? "the body" : issue.path.join(".");
    return bad(`${where}: ${issue?.message ?? "not accepted"}`, `send a JSON object like ${example}`);
  }
  return { ok: true, value: parsed.data };
}

function bad(message: string, fix: string): { ok: false; error: ApiError } {
  return { ok: false, error: { code: "INPUT_INVALID", message, fix } };
}

/** A whole number from a query parameter, within bounds; undefined when absent, an error when not one. */
export function queryInt(
  params: URLSearchParams,
  name: string,
  min: number,
  max: number,
): { ok: true; value: number | undefined } | { ok: false; error: ApiError } {
  const raw = params.get(name);
  if (raw === null) return { ok: true, value: undefined };
  const value = z.coerce.number().int().min(min).max(max).safeParse(raw);
  if (!/^\d{1,7}$/.test(raw) || !value.success)
    return bad(`${name} must be a whole number from ${min} to ${max}`, `e.g. ?${name}=${Math.min(max, 10)}`);
  return { ok: true, value: value.data };
}

/** A swap request as JSON; turned into the words `/llm swap` reads, so one grammar judges both. */
export const swapBodySchema = z.strictObject({
  model: z.string().min(1).max(400),
  host: z.string().min(1).max(64).optional(),
  /** A rollout: a group of the config, or a host set (`gpu-[1-8]`); the grammar checks them as Slack's. */
  group: z.string().min(1).max(64).optional(),
  hosts: z.string().min(1).max(400).optional(),
  tp: z.number().int().min(1).max(64).optional(),
  dryRun: z.boolean().optional(),
  engine: z.string().min(1).max(20).optional(),
  engineRef: z.string().min(1).max(200).optional(),
  set: z.array(z.string().min(1).max(400)).max(20).optional(),
});
export type SwapBody = z.infer<typeof swapBodySchema>;

export const SWAP_BODY_EXAMPLE = '{"model": "Qwen/Qwen3-8B", "host": "gpu-1", "tp": 2, "dryRun": false}';

/** The words of `/llm swap` for a JSON request. */
export function swapWords(body: SwapBody): string[] {
  const words = [body.model];
  if (body.host !== undefined) words.push("--host", body.host);
  if (body.group !== undefined) words.push("--group", body.group);
  if (body.hosts !== undefined) words.push("--hosts", body.hosts);
  if (body.tp !== undefined) words.push("--tp", String(body.tp));
  if (body.dryRun === true) words.push("--dry-run");
  if (body.engine !== undefined) words.push("--engine", body.engine);
  if (body.engineRef !== undefined) words.push("--engine-ref", body.engineRef);
  for (const set of body.set ?? []) words.push("--set", set);
  return words;
}

/** A decision: the plan hash the approver saw (`modelswap show` prints it). */
export const decisionBodySchema = z.strictObject({
  plan: z.string().regex(/^[0-9a-f]{16}$/, "the plan hash: 16 hex digits, as GET /api/swaps/<id> gives it"),
});
export const DECISION_BODY_EXAMPLE = '{"plan": "3f9c2a7d1b4e8f60"}';
