import type { Redis } from "ioredis";
import { beforeEach, describe, expect, it } from "vitest";
import { newSwapId } from "../../src/grammar/swap-id.ts";
import { parseSwapRequest } from "../../src/grammar/swap-request.ts";
import { SYSTEM_ACTOR } from "../../src/store/audit-log.ts";
import {
  checkHostLock,
  clearStuckLock,
  type HeldLock,
  type HostLockCheckDeps,
  isStuck,
  QUEUEING_GRACE_MS,
} from "../../src/store/host-lock-check.ts";
import { keys } from "../../src/store/keys.ts";
import { Store } from "../../src/store/store.ts";
import { newStages, type SwapRecord } from "../../src/swap/swap-record.ts";
import { swapsRacing } from "../support/racing-save.ts";
import { useRedisServer } from "../support/redis-server.ts";

/**
 * The host lock's check on a real redis-server, with the BullMQ job state given (every state BullMQ's
 * getState() answers): which holders are live and never cleared, which are stuck, and that clearing a
 * stuck one ends its swap and gives the host back in one transaction, only if that swap still holds it.
 */
let redis: Redis;
let store: Store;
const jobs = new Map<string, string>();
const deps = (): HostLockCheckDeps => ({ store, jobState: async (id) => jobs.get(id) });
const MINUTE = 60_000;

useRedisServer((client) => {
  redis = client;
  store = new Store(client);
});

beforeEach(async () => {
  await redis.flushall();
  jobs.clear();
});

/** A swap `minutesAgo` old that holds `host`, with its record saved unless `saved` is false. */
async function held(
  host: string,
  {
    minutesAgo = 10,
    saved = true,
    ...rest
  }: { minutesAgo?: number; saved?: boolean } & Partial<SwapRecord> = {},
): Promise<SwapRecord> {
  const at = Date.now() - minutesAgo * MINUTE;
  const parsed = parseSwapRequest(["sim-org/open-llama-1B", "--host", host]);
  if (!parsed.ok) throw new Error(parsed.reason);
  const record: SwapRecord = {
    id: newSwapId(at),
    host,
    requester: "U0ALICE001",
    channel: "C0LLMOPS01",
    createdAt: new Date(at).toISOString(),
    request: parsed.request,
    step: "resolve",
    stages: newStages(),
    tasks: {},
    ...rest,
  };
  expect(await store.locks.lockHost(host, record.id)).toEqual({ ok: true });
  if (saved) await store.swaps.save(record);
  return record;
}

describe("the host lock's check", () => {
  it("a free host has no holder", async () => {
    expect(await checkHostLock("gpu-1", deps())).toEqual({ host: "gpu-1", holder: undefined });
  });

  it.each(["waiting", "delayed", "active", "prioritized", "waiting-children", "paused"])(
    "a swap whose job is %s is live, however old",
    async (state) => {
      const swap = await held("gpu-1", { minutesAgo: 600 });
      jobs.set(swap.id, state);
      const lock = await checkHostLock("gpu-1", deps());
      expect(lock).toMatchObject({ holder: swap.id, liveness: { alive: true, why: "job", job: state } });
      expect(isStuck(lock)).toBe(false);
    },
  );

  it.each([
    ["no job", undefined, "no-job"],
    ["a completed job", "completed", "job-ended"],
    ["a failed job", "failed", "job-ended"],
  ] as const)("a swap with %s is stuck", async (_what, state, why) => {
    const swap = await held("gpu-1");
    if (state !== undefined) jobs.set(swap.id, state);
    const lock = await checkHostLock("gpu-1", deps());
    expect(lock).toMatchObject({ holder: swap.id, since: swap.createdAt, liveness: { alive: false, why } });
    expect(isStuck(lock)).toBe(true);
  });

  it("a lock whose swap was never saved is stuck, since the time in its id", async () => {
    const swap = await held("gpu-1", { saved: false });
    const lock = await checkHostLock("gpu-1", deps());
    expect(lock).toMatchObject({ record: undefined, since: swap.createdAt, liveness: { why: "no-record" } });
    expect(isStuck(lock)).toBe(true);
  });

  it("a swap still being queued (younger than the grace) is live, with or without its record", async () => {
    const young = await held("gpu-1", { minutesAgo: (QUEUEING_GRACE_MS * 0.5) / MINUTE });
    expect((await checkHostLock("gpu-1", deps())) as HeldLock).toMatchObject({
      holder: young.id,
      liveness: { alive: true, why: "queueing" },
    });
    await held("gpu-2", { minutesAgo: 0, saved: false });
    expect(isStuck(await checkHostLock("gpu-2", deps()))).toBe(false);
  });

  it("a swap whose job failed but whose lease is held (a worker is ending it) is live", async () => {
    const swap = await held("gpu-1", { switch: { startedAt: new Date().toISOString() } });
    jobs.set(swap.id, "failed");
    expect(await store.locks.takeLease(swap.id, "ending", 5000)).toBeGreaterThan(0);
    expect(await checkHostLock("gpu-1", deps())).toMatchObject({
      liveness: { alive: true, why: "lease" },
      touched: true,
    });
    await store.locks.releaseLease(swap.id, "ending");
    expect(isStuck(await checkHostLock("gpu-1", deps()))).toBe(true);
  });

  it("a finished swap that still holds its lock is stuck; an unreadable record is never judged", async () => {
    await held("gpu-1", { outcome: "failed", step: "done" });
    expect(await checkHostLock("gpu-1", deps())).toMatchObject({
      liveness: { alive: false, why: "finished" },
    });
    const broken = await held("gpu-2");
    await redis.set(keys.swap(broken.id), JSON.stringify({ id: broken.id, hand: "edited" }));
    expect(await checkHostLock("gpu-2", deps())).toMatchObject({
      record: undefined,
      liveness: { alive: true, why: "unreadable" },
    });
  });
});

describe("clearing a stuck lock", () => {
  it("ends the swap (outcome, reason, who, audit, its thread's event) and frees the host in one go", async () => {
    const swap = await held("gpu-1", {
      stages: { ...newStages(), resolve: { state: "running", startedAt: new Date().toISOString() } },
    });
    const lock = await checkHostLock("gpu-1", deps());
    if (!isStuck(lock)) throw new Error("expected a stuck lock");
    const reason = "cancelled by <@U0BOB00001>: it has no job";
    expect(await clearStuckLock(lock, { by: "U0BOB00001", outcome: "cancelled", reason }, deps())).toBe(true);
    expect(await store.locks.hostHolder("gpu-1")).toBeUndefined();
    const ended = await store.swaps.get(swap.id);
    expect(ended).toMatchObject({
      outcome: "cancelled",
      step: "done",
      reason,
      cancel: { by: "U0BOB00001" },
      stages: { resolve: { state: "skipped" }, finish: { state: "failed", detail: "cancelled" } },
    });
    expect(await store.swaps.events(swap.id, 0)).toEqual([
      expect.objectContaining({ type: "finished", outcome: "cancelled" }),
    ]);
    const audit = await store.audit.read({ swap: swap.id, limit: 10 });
    expect(audit.map((e) => [e.kind, e.who])).toEqual([
      ["outcome", SYSTEM_ACTOR],
      ["cancel", "U0BOB00001"],
    ]);
    // ended now: it is not judged again, and the host takes the next swap
    expect(await checkHostLock("gpu-1", deps())).toEqual({ host: "gpu-1", holder: undefined });
    expect(await store.locks.lockHost("gpu-1", newSwapId())).toEqual({ ok: true });
  });

  it("clears nothing when another swap holds the host by then", async () => {
    const swap = await held("gpu-1");
    const lock = await checkHostLock("gpu-1", deps());
    if (!isStuck(lock)) throw new Error("expected a stuck lock");
    await store.locks.unlockHost("gpu-1", swap.id);
    const next = newSwapId();
    await store.locks.lockHost("gpu-1", next);
    expect(await clearStuckLock(lock, { by: SYSTEM_ACTOR, outcome: "failed", reason: "x" }, deps())).toBe(
      false,
    );
    expect(await store.locks.hostHolder("gpu-1")).toBe(next);
    expect((await store.swaps.get(swap.id))?.outcome).toBeUndefined();
  });

  it("a lock without a record: only the lock goes, and the audit stream says who cleared it", async () => {
    const swap = await held("gpu-1", { saved: false });
    const lock = await checkHostLock("gpu-1", deps());
    if (!isStuck(lock)) throw new Error("expected a stuck lock");
    expect(await clearStuckLock(lock, { by: "U0BOB00001", outcome: "cancelled", reason: "r" }, deps())).toBe(
      true,
    );
    expect(await store.locks.hostHolder("gpu-1")).toBeUndefined();
    expect(await store.swaps.get(swap.id)).toBeUndefined();
    expect(await store.audit.read({ swap: swap.id, limit: 10 })).toEqual([
      expect.objectContaining({ kind: "cancel", who: "U0BOB00001", host: "gpu-1", detail: "r" }),
    ]);
  });
});

/**
 * Deps whose store runs `meanwhile` (once) just before clearStuckLock's save reaches Redis: what another
 * process does between the check that judged the swap dead and the write that ends it (issue 27: a run
 * that finished there had its "rolled back" overwritten with "failed", and its thread and card disagreed).
 */
function racing(meanwhile: () => Promise<void>): HostLockCheckDeps {
  return {
    ...deps(),
    store: { swaps: swapsRacing(store, meanwhile), locks: store.locks, audit: store.audit },
  };
}

describe("clearing a stuck lock while its swap moves on", () => {
  it("a swap that ended after it was judged stuck keeps its outcome, its thread one end", async () => {
    const swap = await held("gpu-1");
    jobs.set(swap.id, "failed");
    const lock = await checkHostLock("gpu-1", deps());
    if (!isStuck(lock)) throw new Error("expected a stuck lock");
    const at = new Date().toISOString();
    // the run that was ending it (its job failed under it) saves its end, and gives the host back
    const finish = () =>
      store.swaps.save(
        { ...swap, outcome: "rolled_back", step: "done", finishedAt: at, reason: "the model answered NaN" },
        {
          events: [{ type: "finished", outcome: "rolled_back", at }],
          also: (tx) => store.locks.unlockHostInTransaction(tx, "gpu-1", swap.id),
        },
      );
    const reason = "it has no job; its host lock was cleared for swap x";
    expect(await clearStuckLock(lock, { by: SYSTEM_ACTOR, outcome: "failed", reason }, racing(finish))).toBe(
      false,
    );
    expect(await store.swaps.get(swap.id)).toMatchObject({
      outcome: "rolled_back",
      reason: "the model answered NaN",
    });
    expect((await store.swaps.events(swap.id, 0)).map((e) => e.type === "finished" && e.outcome)).toEqual([
      "rolled_back",
    ]);
    const audit = await store.audit.read({ swap: swap.id, limit: 10 });
    expect(audit.filter((e) => e.kind === "outcome")).toEqual([]);
    expect(await store.locks.hostHolder("gpu-1")).toBeUndefined();
  });

  it("a swap that ends while its job is looked at is judged finished, not stuck", async () => {
    const swap = await held("gpu-1");
    const at = new Date().toISOString();
    // its record was read before the run's final save; its job, after it (completed by then)
    const lookedLate: HostLockCheckDeps = {
      ...deps(),
      jobState: async () => {
        await store.swaps.save({ ...swap, outcome: "rolled_back", step: "done", finishedAt: at });
        return "completed";
      },
    };
    expect(await checkHostLock("gpu-1", lookedLate)).toMatchObject({
      record: { outcome: "rolled_back" },
      liveness: { alive: false, why: "finished" },
    });
  });

  it("a swap a run took up after it was judged stuck is left to that run", async () => {
    const swap = await held("gpu-1");
    jobs.set(swap.id, "failed");
    const lock = await checkHostLock("gpu-1", deps());
    if (!isStuck(lock)) throw new Error("expected a stuck lock");
    // a worker ending the failed job takes the swap's lease: it will roll back and save the outcome
    const takeUp = async () => {
      expect(await store.locks.takeLease(swap.id, "ending", 5000)).toBeGreaterThan(0);
    };
    expect(
      await clearStuckLock(lock, { by: SYSTEM_ACTOR, outcome: "failed", reason: "r" }, racing(takeUp)),
    ).toBe(false);
    expect((await store.swaps.get(swap.id))?.outcome).toBeUndefined();
    expect(await store.swaps.events(swap.id, 0)).toEqual([]);
    expect(await store.locks.hostHolder("gpu-1")).toBe(swap.id);
  });
});
