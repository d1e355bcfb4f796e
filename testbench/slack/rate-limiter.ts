import type { RateAllowance, RateLimitSettings, RateLimitSettingsInput, RateTier } from "./types.ts";

/**
 * Slack's documented tiers (https://docs.slack.dev/apis/web-api/rate-limits), applied "per API method
 * per app per workspace": Tier 1 1+/min, Tier 2 20+/min, Tier 3 50+/min, Tier 4 100+/min, each with some
 * burst tolerance. Modelled as token buckets holding about one minute's allowance.
 * "special" (auth.test, chat.getPermalink) is documented only as "varies"; we give it a generous bucket.
 */
export const DEFAULT_TIERS: Record<RateTier, RateAllowance> = {
  tier1: { perMinute: 1, burst: 2 },
  tier2: { perMinute: 20, burst: 20 },
  tier3: { perMinute: 50, burst: 50 },
  tier4: { perMinute: 100, burst: 100 },
  special: { perMinute: 600, burst: 100 },
};

/** chat.postMessage: "one message per second per channel", short bursts allowed (burst size is ours). */
export const DEFAULT_POST_MESSAGE_PER_CHANNEL: RateAllowance = { perMinute: 60, burst: 3 };

/** The tier of each method the emulator serves, from Slack's method reference. */
export const METHOD_TIERS: Record<string, RateTier | "postMessage"> = {
  "auth.test": "special",
  "apps.connections.open": "tier1",
  "chat.postMessage": "postMessage",
  "chat.update": "tier3",
  "chat.postEphemeral": "tier4",
  "chat.delete": "tier3",
  "chat.getPermalink": "special",
  "reactions.add": "tier3",
  "reactions.remove": "tier2",
  "reactions.get": "tier3",
  "users.info": "tier4",
  "usergroups.list": "tier2",
  "usergroups.users.list": "tier2",
  "conversations.info": "tier3",
  "conversations.replies": "tier3",
  "conversations.history": "tier3",
  "files.getUploadURLExternal": "tier4",
  "files.completeUploadExternal": "tier4",
};

export function resolveRateLimitSettings(
  input: RateLimitSettingsInput | undefined,
  base?: RateLimitSettings,
): RateLimitSettings {
  const start: RateLimitSettings = base ?? {
    enabled: true,
    scale: 1,
    tiers: { ...DEFAULT_TIERS },
    postMessagePerChannel: { ...DEFAULT_POST_MESSAGE_PER_CHANNEL },
  };
  return {
    enabled: input?.enabled ?? start.enabled,
    scale: input?.scale ?? start.scale,
    tiers: { ...start.tiers, ...(input?.tiers ?? {}) },
    postMessagePerChannel: input?.postMessagePerChannel ?? start.postMessagePerChannel,
  };
}

interface Bucket {
  tokens: number;
  updatedAt: number;
}

export type RateDecision = { allowed: true } | { allowed: false; retryAfterSec: number };

/** Token buckets keyed by method (and channel for chat.postMessage), plus forced 429s for tests. */
export class RateLimiter {
  private settings: RateLimitSettings;
  private readonly buckets = new Map<string, Bucket>();
  private readonly forced = new Map<string, { remaining: number; retryAfterSec: number }>();

  constructor(
    input: RateLimitSettingsInput | undefined,
    private readonly now: () => number = Date.now,
  ) {
    this.settings = resolveRateLimitSettings(input);
  }

  get current(): RateLimitSettings {
    return this.settings;
  }

  /** Changes the settings; buckets start full again so a test begins from a clean slate. */
  configure(input: RateLimitSettingsInput): void {
    this.settings = resolveRateLimitSettings(input, this.settings);
    this.buckets.clear();
  }

  /** The next `count` calls of `method` answer 429 regardless of buckets (even when disabled). */
  force(method: string, count: number, retryAfterSec: number): void {
    this.forced.set(method, { remaining: count, retryAfterSec });
  }

  /** Decides one call; an allowed call spends a token. `channel` matters only for chat.postMessage. */
  check(method: string, channel: string | undefined): RateDecision {
    const forced = this.forced.get(method);
    if (forced !== undefined && forced.remaining > 0) {
      forced.remaining -= 1;
      if (forced.remaining === 0) this.forced.delete(method);
      return { allowed: false, retryAfterSec: forced.retryAfterSec };
    }
    if (!this.settings.enabled) return { allowed: true };
    const tier = METHOD_TIERS[method] ?? "tier3";
    const allowance =
      tier === "postMessage" ? this.settings.postMessagePerChannel : this.settings.tiers[tier];
    const key = tier === "postMessage" ? `${method}|${channel ?? ""}` : method;
    return this.take(key, allowance);
  }

  private take(key: string, allowance: RateAllowance): RateDecision {
    const scale = this.settings.scale;
    const capacity = Math.max(1, allowance.burst * scale);
    const perMs = (allowance.perMinute * scale) / 60_000;
    const now = this.now();
    const bucket = this.buckets.get(key) ?? { tokens: capacity, updatedAt: now };
    bucket.tokens = Math.min(capacity, bucket.tokens + (now - bucket.updatedAt) * perMs);
    bucket.updatedAt = now;
    this.buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { allowed: true };
    }
    const waitMs = perMs > 0 ? (1 - bucket.tokens) / perMs : 60_000;
    return { allowed: false, retryAfterSec: Math.max(1, Math.ceil(waitMs / 1000)) };
  }
}
