import type { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { SwapLocks } from "../../src/store/swap-locks.ts";
import { useRedisServer } from "../support/redis-server.ts";

/**
 * The swap lease on a real redis-server: one run of a swap at a time. A run whose lease lapsed (its
 * process stalled past it) and was taken by another finds out before it saves, and stops.
 */
let redis: Redis;
let store: SwapLocks;

useRedisServer((client) => {
  redis = client;
  store = new SwapLocks(client);
});

describe("the swap lease", () => {
  it("is held by one run at a time; renewing keeps it, releasing gives it up", async () => {
    expect(await store.takeLease("sw-a", "first", 5000)).toBeGreaterThan(0);
    expect(await store.takeLease("sw-a", "second", 5000)).toBeUndefined();
    expect(await store.renewLease("sw-a", "first", 5000)).toBe(true);
    await store.releaseLease("sw-a", "second"); // not the holder: nothing happens
    expect(await store.holdsLease("sw-a", "first")).toBe(true);
    await store.releaseLease("sw-a", "first");
    expect(await store.takeLease("sw-a", "second", 5000)).toBeGreaterThan(0);
    expect(await redis.keys("*lease*")).toEqual(["{modelswap}:store:swap:sw-a:lease"]);
  });

  it("lapses when its holder stops renewing; the late holder can neither renew it nor take it back", async () => {
    expect(await store.takeLease("sw-b", "stalled", 200)).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 400));
    expect(await store.takeLease("sw-b", "new", 5000)).toBeGreaterThan(0);
    expect(await store.renewLease("sw-b", "stalled", 5000)).toBe(false);
    expect(await store.holdsLease("sw-b", "stalled")).toBe(false);
    await store.releaseLease("sw-b", "stalled");
    expect(await store.holdsLease("sw-b", "new")).toBe(true);
  });

  it("comes with a fence number larger than any before, for any swap; a host's larger one is caught up with only by the holder", async () => {
    const first = (await store.takeLease("sw-c", "one", 5000))!;
    const other = (await store.takeLease("sw-d", "two", 5000))!;
    expect(other).toBeGreaterThan(first);
    await store.releaseLease("sw-c", "one");
    const again = (await store.takeLease("sw-c", "three", 5000))!;
    expect(again).toBeGreaterThan(other);
    // a host has seen 1000 (Redis lost its counter since): the holder gets past it, a late run does not
    expect(await store.catchUpFence("sw-c", "one", 1000)).toBeUndefined();
    expect(await store.catchUpFence("sw-c", "three", 1000)).toBe(1001);
    expect(await store.takeLease("sw-e", "four", 5000)).toBe(1002);
  });
});
