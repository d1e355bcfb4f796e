import type { Redis } from "ioredis";
import { beforeEach, describe, expect, it } from "vitest";
import { runSave } from "../../jobs/swap/run-save.ts";
import { takeSwapLease } from "../../jobs/swap/swap-lease.ts";
import { RunningSwap } from "../../jobs/swap/swap-state.ts";
import { systemClock } from "../../src/clock.ts";
import { asCodedError } from "../../src/errors.ts";
import { newSwapId } from "../../src/grammar/swap-id.ts";
import { parseSwapRequest } from "../../src/grammar/swap-request.ts";
import { keys } from "../../src/store/keys.ts";
import { Store } from "../../src/store/store.ts";
import { newStages, type SwapRecord } from "../../src/swap/swap-record.ts";
import { swapsRacing } from "../support/racing-save.ts";
import { useRedisServer } from "../support/redis-server.ts";

/**
 * A run's save on a real redis-server, with another process acting between the run's last look and its
 * write (issue 27): the lease taken over by another run, or the swap ended from outside. Either way the
 * run saves nothing (no record, no event, no audit entry, the host lock kept) and learns why, by code.
 */
let redis: Redis;
let store: Store;
const asked: string[] = [];
const reports = { soon: async (id: string) => void asked.push(id) };

useRedisServer((client) => {
  redis = client;
  store = new Store(client);
});

beforeEach(async () => {
  await redis.flushall();
  asked.length = 0;
});

async function running(host: string): Promise<SwapRecord> {
  const parsed = parseSwapRequest(["sim-org/open-llama-1B", "--host", host]);
  if (!parsed.ok) throw new Error(parsed.reason);
  const record: SwapRecord = {
    id: newSwapId(),
    host,
    requester: "U0ALICE001",
    channel: "C0LLMOPS01",
    createdAt: new Date().toISOString(),
    request: parsed.request,
    step: "sanity",
    stages: newStages(),
    tasks: {},
  };
  expect(await store.locks.lockHost(host, record.id)).toEqual({ ok: true });
  await store.swaps.save(record);
  return record;
}

/** The store, with `meanwhile` run once just before the save reaches Redis. */
function racing(meanwhile: () => Promise<void>): Store {
  return Object.assign(Object.create(store) as Store, { swaps: swapsRacing(store, meanwhile) });
}

/** The run's record after its stages decided to roll back and ended: what its final save would write. */
function ended(record: SwapRecord): RunningSwap {
  const swap = new RunningSwap(structuredClone(record), systemClock, async () => undefined);
  swap.set({ reason: "the model answered NaN" });
  swap.to.finished("rolled_back");
  swap.emit({ type: "finished", outcome: "rolled_back" });
  return swap;
}

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
    return undefined;
  } catch (error) {
    return asCodedError(error).code;
  }
}

describe("a run's save", () => {
  it("saves nothing when another run took the lease between its last look and its write", async () => {
    const record = await running("gpu-1");
    const lease = await takeSwapLease(store.locks, record.id, 5000);
    if (lease === undefined) throw new Error("expected the lease");
    // this run stalls past its lease; another takes the swap over and saves where it is
    const takeOver = async () => {
      await redis.del(keys.swapLease(record.id));
      const other = await takeSwapLease(store.locks, record.id, 5000);
      if (other === undefined) throw new Error("expected the lease to be free");
      await store.swaps.save({ ...record, step: "rollback", reason: "taken over" });
    };
    const save = runSave({ store: racing(takeOver), reports }, lease);
    expect(await codeOf(save(ended(record)))).toBe("SWAP_SUPERSEDED");
    expect(await store.swaps.get(record.id)).toMatchObject({ step: "rollback", reason: "taken over" });
    expect((await store.swaps.get(record.id))?.outcome).toBeUndefined();
    expect(await store.swaps.events(record.id, 0)).toEqual([]);
    expect(await store.locks.hostHolder("gpu-1")).toBe(record.id);
    expect(asked).toEqual([]);
    await lease.release();
  });

  it("saves nothing over a swap that ended meanwhile", async () => {
    const record = await running("gpu-1");
    const lease = await takeSwapLease(store.locks, record.id, 5000);
    if (lease === undefined) throw new Error("expected the lease");
    const at = new Date().toISOString();
    const cancelled = async () => {
      await store.swaps.save(
        { ...record, outcome: "cancelled", step: "done", finishedAt: at },
        { events: [{ type: "finished", outcome: "cancelled", at }] },
      );
    };
    const save = runSave({ store: racing(cancelled), reports }, lease);
    expect(await codeOf(save(ended(record)))).toBe("SWAP_ENDED");
    expect((await store.swaps.get(record.id))?.outcome).toBe("cancelled");
    expect((await store.swaps.events(record.id, 0)).map((e) => e.type === "finished" && e.outcome)).toEqual([
      "cancelled",
    ]);
    await lease.release();
  });

  it("saves, with its end, the host's release and the reporter's ask, while it holds the lease", async () => {
    const record = await running("gpu-1");
    const lease = await takeSwapLease(store.locks, record.id, 5000);
    if (lease === undefined) throw new Error("expected the lease");
    await runSave({ store, reports }, lease)(ended(record));
    expect((await store.swaps.get(record.id))?.outcome).toBe("rolled_back");
    expect(await store.locks.hostHolder("gpu-1")).toBeUndefined();
    expect(asked).toEqual([record.id]);
    await lease.release();
  });
});

describe("a swap's save, resent", () => {
  it("an end saved again as it is (a resend after a lost answer) writes nothing twice", async () => {
    const record = await running("gpu-1");
    const at = new Date().toISOString();
    const end = { ...record, outcome: "rolled_back" as const, step: "done" as const, finishedAt: at };
    const extras = {
      events: [{ type: "finished" as const, outcome: "rolled_back", at }],
      audit: [
        { at, kind: "outcome" as const, who: "modelswap", host: "gpu-1", swap: record.id, detail: "x" },
      ],
    };
    await store.swaps.save(end, extras);
    await store.swaps.save(end, extras);
    expect(await store.swaps.events(record.id, 0)).toHaveLength(1);
    expect(await store.audit.read({ swap: record.id, limit: 10 })).toHaveLength(1);
    // another end is refused, by code, and changes nothing
    expect(await codeOf(store.swaps.save({ ...end, outcome: "failed" }, extras))).toBe("SWAP_ENDED");
    expect((await store.swaps.get(record.id))?.outcome).toBe("rolled_back");
    expect(await store.swaps.events(record.id, 0)).toHaveLength(1);
  });
});
