import type { EngineKind } from "../engine/engine-kind.ts";
import type { RedisClient } from "../redis/redis-client.ts";
import { keys } from "./keys.ts";

/*
 * Version 3: every record names its engine. Records from before there was a choice of engine named none,
 * and each reader guessed (SGLang, or the host's configured engine): the guess is made once here, as each
 * field's own documentation said it, and no reader guesses again.
 */

type Json = Record<string, unknown>;

/** The engine a host's config names (SGLang where it names none): what "the host's" meant. */
export type HostEngineOf = (host: string) => EngineKind;

const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** `value` with `engine` set where it has none; anything not an object is left as it is. */
function withEngine(value: unknown, field: string, kind: EngineKind): unknown {
  return isObject(value) && value[field] === undefined ? { ...value, [field]: kind } : value;
}

/** A swap record's plan (absent: SGLang, the only engine then) and previous unit (absent: the host's). */
export function swapWithEngineKinds(record: Json, hostEngine: EngineKind): Json {
  return {
    ...record,
    ...(record.plan === undefined ? {} : { plan: withEngine(record.plan, "engineKind", "sglang") }),
    ...(record.previous === undefined ? {} : { previous: withEngine(record.previous, "engine", hostEngine) }),
  };
}

/** A swap event: an engine built, a benchmark and the numbers it was compared with (absent: SGLang). */
export function eventWithEngineKinds(event: Json): Json {
  if (event.type === "built") return withEngine(event, "engine", "sglang") as Json;
  if (event.type !== "benchmarked") return event;
  const next = withEngine(event, "engine", "sglang") as Json;
  return next.previous === undefined
    ? next
    : { ...next, previous: withEngine(next.previous, "engine", "sglang") };
}

/** What a host serves and what served before it (absent: the host's engine). */
export function servingWithEngineKinds(serving: Json, hostEngine: EngineKind): Json {
  const next = withEngine(serving, "engine", hostEngine) as Json;
  return next.previous === undefined
    ? next
    : { ...next, previous: withEngine(next.previous, "engine", hostEngine) };
}

/** A host's last benchmark (absent: SGLang). */
export function benchmarkWithEngineKind(benchmark: Json): Json {
  return withEngine(benchmark, "engine", "sglang") as Json;
}

/**
 * Rewrites the JSON at `key` through `change` when it changes it; a value that is not a JSON object is left
 * for its reader to report. Returns whether it wrote.
 */
async function rewrite(redis: RedisClient, key: string, change: (value: Json) => Json): Promise<boolean> {
  const raw = await redis.get(key);
  const next = raw === null ? undefined : changed(raw, change);
  if (next === undefined) return false;
  // KEEPTTL: a finished swap's keys keep their retention
  await redis.set(key, next, "KEEPTTL");
  return true;
}

function changed(raw: string, change: (value: Json) => Json): string | undefined {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (!isObject(value)) return undefined;
  const next = JSON.stringify(change(value));
  return next === JSON.stringify(value) ? undefined : next;
}

/**
 * Gives every stored record its engine: swap records and their events, what each host serves and its last
 * benchmark. Idempotent: a record that names its engine is left as it is. Returns the keys rewritten.
 */
export async function recordEngineKinds(
  redis: RedisClient,
  hostEngine: HostEngineOf,
  scan: (pattern: string) => Promise<string[]>,
): Promise<number> {
  let migrated = 0;
  for (const key of await scan(keys.swap("*"))) {
    const id = nameIn(keys.swap, key);
    if (id.includes(":")) continue;
    const raw = await redis.get(key);
    const host = raw === null ? undefined : hostOf(raw);
    if (await rewrite(redis, key, (r) => swapWithEngineKinds(r, hostEngine(host ?? "")))) migrated += 1;
    migrated += await rewriteEvents(redis, keys.swapEvents(id));
  }
  for (const key of await scan(keys.serving("*"))) {
    const host = nameIn(keys.serving, key);
    if (await rewrite(redis, key, (s) => servingWithEngineKinds(s, hostEngine(host)))) migrated += 1;
  }
  for (const key of await scan(keys.benchmark("*")))
    if (await rewrite(redis, key, benchmarkWithEngineKind)) migrated += 1;
  return migrated;
}

/** The name in `key`, one of `template`'s keys: `swap:<id>` → id. */
function nameIn(template: (name: string) => string, key: string): string {
  const [before = "", after = ""] = template("\u0000").split("\u0000");
  return key.slice(before.length, key.length - after.length);
}

function hostOf(raw: string): string | undefined {
  try {
    const host = (JSON.parse(raw) as { host?: unknown }).host;
    return typeof host === "string" ? host : undefined;
  } catch {
    return undefined;
  }
}

/** A swap's events, each in its place (LSET: the list's order and length stay). */
async function rewriteEvents(redis: RedisClient, key: string): Promise<number> {
  const raws = await redis.lrange(key, 0, -1);
  let migrated = 0;
  for (const [index, raw] of raws.entries()) {
    const next = changed(raw, eventWithEngineKinds);
    if (next === undefined) continue;
    await redis.lset(key, index, next);
    migrated += 1;
  }
  return migrated;
}
