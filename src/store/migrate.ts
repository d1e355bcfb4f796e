import { randomBytes } from "node:crypto";
import type { Logger } from "../log.ts";
import { type RedisClient, requireSlotOwner } from "../redis/redis-client.ts";
import { SWAP_OUTCOMES, type SwapOutcome, swapRecordSchema } from "../swap/swap-record.ts";
import { keys, STORE_VERSION, swapKeys } from "./keys.ts";
import { type HostEngineOf, recordEngineKinds, swapWithEngineKinds } from "./migrate-engine-kinds.ts";
import type { Store } from "./store.ts";
import { RELEASE_IF_HELD } from "./swap-locks.ts";

/*
 * Version 1 (modelswap before the store): keys straight under the hash tag, some of them inside the
 * BullMQ queues' namespaces (`{modelswap}:swaps` and `{modelswap}:swaps:host:*` are the "swaps" queue's,
 * `{modelswap}:monitor:*` the "monitor" queue's), whole Hub config files in the records, and the card's
 * and plan's Slack ts in the record. Version 2 keeps everything under `{modelswap}:store:`. Version 3:
 * every record names its engine (migrate-engine-kinds.ts).
 */
const V1 = "{modelswap}";

export interface MigrationResult {
  from: number;
  to: number;
  /** Keys moved or rewritten. */
  migrated: number;
  /** Records that did not match the new schema after the move (kept; readers report them). */
  invalid: string[];
  /** Finished swaps already past their retention (`records:`), deleted rather than moved to expire. */
  expired: string[];
}

/** A migrated swap that has finished: its keys expire like a new one's, counted from when it finished. */
interface Retained {
  id: string;
  host: string | undefined;
  /** What is left of its retention; at most the whole retention, zero or less when it has passed. */
  remainingMs: number;
}

/**
 * Brings a deployment's keys to STORE_VERSION. Runs at start-up in every process; the first takes a
 * lock and migrates, the others wait for the version key. Idempotent: a migration cut short by a crash
 * is run again from the start (each key is moved once; a moved key is gone from its old name). Stop
 * every process of the old version first (docs/redis.md, Upgrades): an old process would go on writing
 * the old keys.
 */
export async function migrateStore(
  store: Store,
  log: Logger,
  hostEngine: HostEngineOf,
): Promise<MigrationResult> {
  const redis = store.redis;
  const current = Number((await redis.get(keys.version)) ?? 0);
  const nothing = (at: number): MigrationResult => ({
    from: at,
    to: at,
    migrated: 0,
    invalid: [],
    expired: [],
  });
  if (current >= STORE_VERSION) return nothing(current);
  const token = randomBytes(8).toString("hex");
  for (;;) {
    if ((await redis.set(keys.migrationLock, token, "EX", 300, "NX")) === "OK") break;
    await new Promise((resolve) => setTimeout(resolve, 200));
    const now = Number((await redis.get(keys.version)) ?? 0);
    if (now >= STORE_VERSION) return nothing(now);
  }
  try {
    const result: MigrationResult = { ...nothing(current), to: STORE_VERSION };
    if (current < 2) await fromV1(store, log, hostEngine, result);
    if (current < 3)
      result.migrated += await recordEngineKinds(redis, hostEngine, (pattern) => scan(redis, pattern));
    await redis.set(keys.version, String(STORE_VERSION));
    return result;
  } finally {
    await redis.eval(RELEASE_IF_HELD, 1, keys.migrationLock, token);
  }
}

async function fromV1(
  store: Store,
  log: Logger,
  hostEngine: HostEngineOf,
  result: MigrationResult,
): Promise<void> {
  const redis = store.redis;
  const retained: Retained[] = [];
  const rename = async (from: string, to: string) => {
    if ((await redis.exists(from)) === 0) return;
    // a key already at its new name (a migration cut short) wins; the old one goes
    if ((await redis.renamenx(from, to)) === 0) await redis.del(from);
    result.migrated += 1;
  };
  for (const key of await scan(redis, `${V1}:swap:*`)) {
    const id = key.slice(`${V1}:swap:`.length);
    if (id.includes(":")) continue;
    const kept = await migrateRecord(store, key, id, log, hostEngine, result);
    if (kept !== undefined) retained.push(kept);
  }
  await rename(`${V1}:swaps`, keys.ledger);
  for (const key of await scan(redis, `${V1}:swaps:host:*`))
    await rename(key, keys.hostLedger(key.slice(`${V1}:swaps:host:`.length)));
  for (const key of await scan(redis, `${V1}:lock:host:*`))
    await rename(key, keys.hostLock(key.slice(`${V1}:lock:host:`.length)));
  for (const key of await scan(redis, `${V1}:cancel:*`))
    await rename(key, keys.swapCancel(key.slice(`${V1}:cancel:`.length)));
  for (const key of await scan(redis, `${V1}:decision:*`)) {
    const [id = "", hash = ""] = key.slice(`${V1}:decision:`.length).split(":");
    const value = await redis.get(key);
    if (value !== null) await redis.hsetnx(keys.decisions(id), hash, value);
    await redis.del(key);
    result.migrated += 1;
  }
  for (const key of await scan(redis, `${V1}:planmsg:*`)) {
    const [channel = "", ts = ""] = key.slice(`${V1}:planmsg:`.length).split(":");
    const swapId = await redis.get(key);
    if (swapId !== null) {
      const planHash = JSON.parse((await redis.get(keys.swap(swapId))) ?? "{}").planHash ?? "";
      await redis.set(keys.planMessage(channel, ts), JSON.stringify({ swapId, planHash }), "EX", 30 * 86_400);
    }
    await redis.del(key);
    result.migrated += 1;
  }
  for (const key of await scan(redis, `${V1}:host:*`)) {
    const [host = "", what = ""] = key.slice(`${V1}:host:`.length).split(":");
    if (what === "serving") await migrateServing(redis, key, host, result);
    else if (what === "benchmark") await rename(key, keys.benchmark(host));
  }
  for (const key of await scan(redis, `${V1}:monitor:host:*`))
    await rename(key, keys.health(key.slice(`${V1}:monitor:host:`.length)));
  // short-lived: a check's slot, a lease, an Events API delivery; they expire on their own, nothing to keep
  for (const pattern of [`${V1}:monitor:checking:*`, `${V1}:lease:swap:*`, `${V1}:event:*`])
    for (const key of await scan(redis, pattern)) await redis.del(key);
  await rename(`${V1}:audit`, keys.audit);
  await rename(`${V1}:metrics:swaps`, keys.tally);
  await rename(`${V1}:metrics:swaps:tallied`, keys.tallied);
  // last, once a swap's decisions and cancel request have moved too: every key of it expires together
  for (const { id, host, remainingMs } of retained) {
    const tx = redis.multi();
    if (remainingMs > 0) {
      for (const key of swapKeys(id)) tx.pexpire(key, remainingMs);
    } else {
      tx.del(...swapKeys(id)).zrem(keys.ledger, id);
      if (host !== undefined) tx.zrem(keys.hostLedger(host), id);
      result.expired.push(id);
    }
    await tx.exec();
  }
  if (result.expired.length > 0)
    log.info({ swaps: result.expired }, "v1 swap records past their retention (records:) were deleted");
}

/**
 * A v1 record: the Hub's config files go (the plan's model facts hold what was read from them), the card's
 * and plan's message ts go to the reporter's state, the approval window gets its own field. A finished
 * one is returned with what is left of its retention (v1 kept records forever).
 */
async function migrateRecord(
  store: Store,
  key: string,
  id: string,
  log: Logger,
  hostEngine: HostEngineOf,
  result: MigrationResult,
): Promise<Retained | undefined> {
  const redis = store.redis;
  const raw = await redis.get(key);
  if (raw === null) return undefined;
  let old: Record<string, unknown>;
  try {
    old = JSON.parse(raw) as Record<string, unknown>;
  } catch {
    result.invalid.push(id);
    await redis.renamenx(key, keys.swap(id));
    // not JSON: whether it finished cannot be told, so it is kept (readers report it)
    return undefined;
  }
  const { cardTs, planTs, lastCardUpdate: _card, approvalExpiresAt, ...rest } = old;
  const record: Record<string, unknown> = { ...rest };
  const strip = (model: unknown) => {
    if (typeof model !== "object" || model === null) return model;
    const { config: _c, quantConfig: _q, ...kept } = model as Record<string, unknown>;
    if (kept.license === null) delete kept.license;
    return kept;
  };
  record.model = strip(record.model);
  const plan = record.plan as Record<string, unknown> | undefined;
  if (plan !== undefined) {
    record.plan = { ...plan, model: strip(plan.model) };
    record.facts ??= plan.facts;
  }
  if (typeof approvalExpiresAt === "string") {
    record.approval = { requestedAt: record.createdAt, expiresAt: approvalExpiresAt };
  }
  const parsed = swapRecordSchema.safeParse(
    swapWithEngineKinds(record, hostEngine(typeof record.host === "string" ? record.host : "")),
  );
  if (!parsed.success) {
    result.invalid.push(id);
    log.warn(
      { swap: id, issue: parsed.error.issues[0]?.message, path: parsed.error.issues[0]?.path },
      "a v1 swap record does not match the new schema; kept as it is",
    );
  }
  const tx = redis
    .multi()
    .set(keys.swap(id), JSON.stringify(parsed.success ? parsed.data : record))
    .del(key);
  if (typeof cardTs === "string") {
    const plans =
      typeof planTs === "string" && typeof record.planHash === "string" ? { [record.planHash]: planTs } : {};
    // v1 swaps have no events: a running one's new events go on in the card's thread
    tx.set(keys.swapReport(id), JSON.stringify({ cardTs, cards: 1, cursor: 0, plans }));
  }
  await tx.exec();
  result.migrated += 1;
  return retention(store, id, record);
}

/** What is left of a finished v1 swap's retention, counted as a new swap's is: from when it finished. */
function retention(store: Store, id: string, record: Record<string, unknown>): Retained | undefined {
  const outcome = SWAP_OUTCOMES.find((o): o is SwapOutcome => o === record.outcome);
  const ttlMs = store.swaps.ttlMs({ outcome });
  if (ttlMs === undefined) return undefined;
  const at = [record.finishedAt, record.createdAt]
    .map((t) => (typeof t === "string" ? Date.parse(t) : Number.NaN))
    .find((t) => !Number.isNaN(t));
  const remainingMs = at === undefined ? ttlMs : Math.min(ttlMs, at + ttlMs - Date.now());
  return { id, host: typeof record.host === "string" ? record.host : undefined, remainingMs };
}

/** What a host serves gains `previous` (what `/llm rollback` goes back to), from the swap that put it there. */
async function migrateServing(
  redis: RedisClient,
  key: string,
  host: string,
  result: MigrationResult,
): Promise<void> {
  const raw = await redis.get(key);
  if (raw === null) return;
  const serving = JSON.parse(raw) as Record<string, unknown>;
  if (typeof serving.swapId === "string" && serving.previous === undefined) {
    const swap = await redis.get(keys.swap(serving.swapId));
    const previous = swap === null ? undefined : (JSON.parse(swap) as { previous?: unknown }).previous;
    if (previous !== undefined) serving.previous = previous;
  }
  await redis.multi().set(keys.serving(host), JSON.stringify(serving)).del(key).exec();
  result.migrated += 1;
}

async function scan(redis: RedisClient, pattern: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = "0";
  do {
    // on a Cluster, SCAN goes to a random node: ask the one that holds modelswap's slot
    const [next, batch] = await (await requireSlotOwner(redis)).scan(cursor, "MATCH", pattern, "COUNT", 1000);
    found.push(...batch);
    cursor = next;
  } while (cursor !== "0");
  return found;
}
