import { z } from "zod";
import { redactSecretsInJson } from "../log.ts";
import type { RedisClient } from "../redis/redis-client.ts";
import type { StoredSwapEvent } from "../swap/swap-events.ts";
import { type Decision, decisionSchema } from "../swap/swap-record.ts";
import type { AuditEvent, AuditLog } from "./audit-log.ts";
import { keys } from "./keys.ts";
import type { ReplicaAck } from "./replica-ack.ts";
import { parseStored } from "./swap-records.ts";

/**
 * KEYS: the swap's decisions hash, its events list, the reporter's pending set, the audit stream.
 * ARGV: plan hash, decision JSON, event JSON, swap id, now (ms), audit MAXLEN, then the audit fields.
 * The first decision on a plan is recorded together with its event and its audit entry, or nothing is.
 */
const DECIDE_ONCE = `
if redis.call('hsetnx', KEYS[1], ARGV[1], ARGV[2]) == 0 then
  return redis.call('hget', KEYS[1], ARGV[1])
end
redis.call('rpush', KEYS[2], ARGV[3])
redis.call('zadd', KEYS[3], 'NX', ARGV[5], ARGV[4])
local fields = {}
for i = 7, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('xadd', KEYS[4], 'MAXLEN', '~', ARGV[6], '*', unpack(fields))
return false
`;

const planMessageSchema = z.object({ swapId: z.string(), planHash: z.string() });
export type PlanMessageRef = z.infer<typeof planMessageSchema>;
const cancelSchema = z.object({ by: z.string(), at: z.string() });

/**
 * The approval gate's state: the decisions on each plan of a swap (the first on a plan wins: Slack's
 * retries, double clicks and two approvers at once record one), which Slack message shows which plan
 * (so a ✅ counts for the plan it was given on), and cancel requests.
 */
export class ApprovalState {
  constructor(
    private readonly redis: RedisClient,
    private readonly audit: AuditLog,
    private readonly secrets: readonly string[],
    private readonly replicas?: ReplicaAck,
  ) {}

  /**
   * Records a decision if none was recorded for this plan yet, with its event (the reporter updates the
   * plan message) and its audit entry; returns the decision that stands.
   */
  async decide(
    swapId: string,
    decision: Decision,
    event: StoredSwapEvent,
    audit: AuditEvent,
  ): Promise<{ recorded: boolean; decision: Decision }> {
    const existing = (await this.redis.eval(
      DECIDE_ONCE,
      4,
      keys.decisions(swapId),
      keys.swapEvents(swapId),
      keys.reportsPending,
      keys.audit,
      decision.planHash,
      JSON.stringify(decision),
      redactSecretsInJson(JSON.stringify(event), this.secrets),
      swapId,
      String(Date.now()),
      String(this.audit.maxEntries),
      ...this.audit.fields(audit),
    )) as string | null;
    if (existing === null) {
      // the approver was told it counted: on a replica before that answer goes back
      await this.replicas?.confirm(`the decision on swap ${swapId}`);
      return { recorded: true, decision };
    }
    return { recorded: false, decision: parseStored(decisionSchema, existing, "decision on", swapId) };
  }

  async decision(swapId: string, planHash: string): Promise<Decision | undefined> {
    const raw = await this.redis.hget(keys.decisions(swapId), planHash);
    return raw === null ? undefined : parseStored(decisionSchema, raw, "decision on", swapId);
  }

  /** Remembers which plan a Slack message shows, for as long as the swap's record is kept. */
  async indexPlanMessage(channel: string, ts: string, ref: PlanMessageRef, ttlMs: number): Promise<void> {
    await this.redis.set(
      keys.planMessage(channel, ts),
      JSON.stringify(ref),
      "PX",
      Math.max(1, Math.round(ttlMs)),
    );
  }

  async planMessage(channel: string, ts: string): Promise<PlanMessageRef | undefined> {
    const raw = await this.redis.get(keys.planMessage(channel, ts));
    return raw === null ? undefined : parseStored(planMessageSchema, raw, "plan message", ts);
  }

  /** Asks a swap to stop; the first request stands. */
  async requestCancel(swapId: string, by: string, at = new Date()): Promise<boolean> {
    const set = await this.redis.set(
      keys.swapCancel(swapId),
      JSON.stringify({ by, at: at.toISOString() }),
      "NX",
    );
    return set === "OK";
  }

  async cancelRequest(swapId: string): Promise<{ by: string; at: string } | undefined> {
    const raw = await this.redis.get(keys.swapCancel(swapId));
    return raw === null ? undefined : parseStored(cancelSchema, raw, "cancel request of", swapId);
  }
}
