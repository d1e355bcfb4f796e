import { CodedError } from "../errors.ts";
import { redactSecretsInJson } from "../log.ts";
import type { RedisClient } from "../redis/redis-client.ts";
import {
  type RolloutEvent,
  type RolloutRecord,
  rolloutEventSchema,
  rolloutRecordSchema,
} from "../rollout/rollout-record.ts";
import type { AuditEvent, AuditLog } from "./audit-log.ts";
import { keys, swapKeys } from "./keys.ts";
import type { ReplicaAck } from "./replica-ack.ts";
import { SAVE_IF_ALLOWED, SaveWrites, superseded } from "./save-writes.ts";
import { parseStored } from "./swap-records.ts";

/**
 * Rollout records and their events. A record is saved with its new events by the script that saves swap
 * records (src/store/save-writes.ts), on the same conditions: never after it has ended, and, for a run's
 * save, only while the run holds the rollout's lease. A finished rollout expires with the retention.
 */
export class RolloutRecords {
  constructor(
    private readonly redis: RedisClient,
    private readonly audit: AuditLog,
    private readonly secrets: readonly string[],
    private readonly finishedDays: number,
    private readonly replicas?: ReplicaAck,
  ) {}

  async get(id: string): Promise<RolloutRecord | undefined> {
    const raw = await this.redis.get(keys.rollout(id));
    return raw === null ? undefined : parseStored(rolloutRecordSchema, raw, "rollout record", id);
  }

  /** Saves; `lease`: only while that run holds the rollout (ROLLOUT_SUPERSEDED otherwise). */
  async save(
    record: RolloutRecord,
    extras: { events?: RolloutEvent[]; audit?: AuditEvent[]; lease?: string } = {},
  ): Promise<void> {
    const json = redactSecretsInJson(JSON.stringify(record), this.secrets);
    const tx = new SaveWrites();
    tx.zadd(keys.rollouts, Date.parse(record.createdAt), record.id);
    const events = extras.events ?? [];
    if (events.length > 0)
      tx.rpush(
        keys.swapEvents(record.id),
        ...events.map((e) => redactSecretsInJson(JSON.stringify(e), this.secrets)),
      );
    tx.zadd(keys.reportsPending, "NX", Date.now(), record.id);
    this.audit.inTransaction(tx, extras.audit ?? []);
    if (record.outcome !== undefined) {
      const ttl = this.finishedDays * 86_400_000;
      for (const key of [keys.rollout(record.id), ...swapKeys(record.id)]) tx.pexpire(key, ttl);
    }
    const writes = tx.scriptArgs();
    const answer = String(
      await this.redis.eval(
        SAVE_IF_ALLOWED,
        3 + writes.keys.length,
        keys.rollout(record.id),
        keys.swapLease(record.id),
        keys.rollout(record.id),
        ...writes.keys,
        extras.lease ?? "",
        "",
        json,
        ...writes.args,
      ),
    );
    if (answer.startsWith("ended "))
      throw new CodedError(
        "ROLLOUT_ENDED",
        `rollout ${record.id} has ended (${answer.slice(6)}) meanwhile; this save was not made`,
        "nothing to do: a rollout ends once, and its thread said how",
      );
    if (answer === "lease") throw superseded(record.id);
    // the record decides which hosts the rollout lets switch: on a replica before any does
    await this.replicas?.confirm(`rollout ${record.id}'s record (step ${record.step})`);
  }

  async events(id: string, from: number): Promise<RolloutEvent[]> {
    const raws = await this.redis.lrange(keys.swapEvents(id), from, -1);
    return raws.map((raw) => parseStored(rolloutEventSchema, raw, "rollout event of", id));
  }

  /** The newest rollouts first. */
  async recent(limit: number): Promise<RolloutRecord[]> {
    const ids = await this.redis.zrevrange(keys.rollouts, 0, limit - 1);
    const records = await Promise.all(ids.map((id) => this.get(id).catch(() => undefined)));
    return records.filter((r): r is RolloutRecord => r !== undefined);
  }
}
