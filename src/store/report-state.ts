import { z } from "zod";
import type { RedisClient } from "../redis/redis-client.ts";
import { keys } from "./keys.ts";
import { RELEASE_IF_HELD, RENEW_IF_HELD } from "./swap-locks.ts";
import { parseStored } from "./swap-records.ts";

/** How far the reporter got with a swap in Slack: its card, its plan messages, the events posted. */
export const reportStateSchema = z.object({
  /** The card (the swap's parent message) as it stands now; a deleted card is posted again. */
  cardTs: z.string().optional(),
  /** Cards posted so far (more than one when Slack lost or someone deleted one). */
  cards: z.number().int().default(0),
  /** The events posted: the next one to post is at this index. */
  cursor: z.number().int().default(0),
  /** The messages posted for the event at `cursor` so far (post key → ts): a retry posts only the rest. */
  posts: z.record(z.string(), z.string()).default({}),
  /**
   * Progress events from `cursor` up to this index are being posted as one message (folded): kept until
   * that message is posted, so a reporter that died after posting it moves past the same events.
   */
  foldTo: z.number().int().optional(),
  /**
   * A post sent whose answer is not recorded yet. Found set at the next run, it means a reporter died
   * in between: Slack is asked (by the post's metadata) whether the message is there before it is sent again.
   */
  inFlight: z.object({ key: z.string(), threadTs: z.string().optional() }).optional(),
  /** Plan hash → the message that shows that plan. */
  plans: z.record(z.string(), z.string()).default({}),
  /** A rollout's card: host → the permalink of its swap's card (its thread), asked of Slack once. */
  links: z.record(z.string(), z.string()).default({}),
  /** What the card shows now (a hash of its rendering), when it was last edited, and its stage line. */
  cardHash: z.string().optional(),
  cardAt: z.number().optional(),
  cardStages: z.string().optional(),
  /**
   * The bot's own ✅/❌ on decided plans, left for later: reactions.remove is Tier 2 (about 20 a minute),
   * and with many swaps deciding at once a run waiting for it would hold the swap's reporter (and its
   * outcome) for a minute. Taken back once the swap has ended, or at once when nothing waits for it.
   */
  unreacts: z.array(z.object({ ts: z.string(), name: z.string() })).default([]),
  /** Slack refused: since when, how often in a row, and when to try again. */
  failingSince: z.number().optional(),
  failures: z.number().int().default(0),
  retryAt: z.number().optional(),
  lastError: z.string().optional(),
});
export type ReportState = z.infer<typeof reportStateSchema>;

/**
 * The reporter's own state per swap (never in the swap's record, which only the swap's run writes), its
 * lock (one reporter at a time per swap), and the set of swaps it has not caught up with.
 */
export class ReportStates {
  constructor(private readonly redis: RedisClient) {}

  async get(swapId: string): Promise<ReportState> {
    const raw = await this.redis.get(keys.swapReport(swapId));
    return raw === null
      ? reportStateSchema.parse({})
      : parseStored(reportStateSchema, raw, "report state of", swapId);
  }

  /** Saved; expires with the swap's record when that one has a TTL. */
  async set(swapId: string, state: ReportState): Promise<void> {
    const ttl = await this.redis.pttl(keys.swap(swapId));
    if (ttl > 0) await this.redis.set(keys.swapReport(swapId), JSON.stringify(state), "PX", ttl);
    else await this.redis.set(keys.swapReport(swapId), JSON.stringify(state));
  }

  async lock(swapId: string, token: string, ms: number): Promise<boolean> {
    return (await this.redis.set(keys.swapReportLock(swapId), token, "PX", ms, "NX")) === "OK";
  }

  async renewLock(swapId: string, token: string, ms: number): Promise<boolean> {
    return (await this.redis.eval(RENEW_IF_HELD, 1, keys.swapReportLock(swapId), token, String(ms))) === 1;
  }

  async unlock(swapId: string, token: string): Promise<void> {
    await this.redis.eval(RELEASE_IF_HELD, 1, keys.swapReportLock(swapId), token);
  }

  /** Swaps with something left to report, noticed at least `olderThanMs` ago. */
  async pending(olderThanMs: number, limit = 200): Promise<string[]> {
    return await this.redis.zrangebyscore(
      keys.reportsPending,
      "-inf",
      Date.now() - olderThanMs,
      "LIMIT",
      0,
      limit,
    );
  }

  /** Caught up with a swap that has ended (or whose record is gone): the sweep need not look again. */
  async caughtUp(swapId: string): Promise<void> {
    await this.redis.zrem(keys.reportsPending, swapId);
  }
}
