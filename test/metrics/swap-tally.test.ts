import type { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { newSwapId } from "../../src/grammar/swap-id.ts";
import { parseSwapRequest } from "../../src/grammar/swap-request.ts";
import { Store } from "../../src/store/store.ts";
import { readSwapTally } from "../../src/store/swap-tally.ts";
import { newStages, type SwapRecord } from "../../src/swap/swap-record.ts";
import { useRedisServer } from "../support/redis-server.ts";

/**
 * The swap tally on a real redis-server, through the store's save as the pipeline calls it: a swap counts
 * once, when the save that records its outcome commits, however often it is saved after that (a worker
 * that dies after the save and a second one that finishes the step again save it twice).
 */
let redis: Redis;
useRedisServer((client) => {
  redis = client;
});

function swap(id: string, host: string): SwapRecord {
  const parsed = parseSwapRequest(["sim-org/open-llama-1B", "--host", host]);
  if (!parsed.ok) throw new Error(parsed.reason);
  return {
    id,
    host,
    requester: "U1",
    channel: "C1",
    createdAt: new Date().toISOString(),
    request: parsed.request,
    step: "switch",
    stages: newStages(),
    tasks: {},
  };
}

describe("the swap tally", () => {
  it("counts a swap once, when its outcome is saved, with the ledger in the same transaction", async () => {
    const store = new Store(redis);
    const a = swap(newSwapId(), "gpu-1");
    await store.swaps.save(a);
    expect((await readSwapTally(redis)).swaps).toEqual([]);

    a.outcome = "succeeded";
    a.step = "done";
    a.downtimeSeconds = 12.5;
    a.stages.switch = {
      state: "done",
      startedAt: "2030-01-01T00:00:00Z",
      finishedAt: "2030-01-01T00:00:02Z",
    };
    await store.swaps.save(a);
    await store.swaps.save(a); // saved again (a retried step): not counted again
    const b = swap(newSwapId(), "gpu-1");
    b.outcome = "succeeded";
    await store.swaps.save(b);

    const tally = await readSwapTally(redis);
    expect(tally.swaps).toEqual([{ host: "gpu-1", outcome: "succeeded", count: 2 }]);
    expect(tally.stages.get("switch")).toEqual({ counts: new Map([["5", 1]]), sum: 2 });
    expect(tally.downtimeLast.get("gpu-1")).toBe(12.5);
    expect([...tally.downtime.values()].map((d) => [d.host, d.outcome, d.sum])).toEqual([
      ["gpu-1", "succeeded", 12.5],
    ]);
    // the keys carry the deployment's hash tag, like every key modelswap writes
    expect((await redis.keys("*tally*")).sort()).toEqual([
      "{modelswap}:store:tally",
      "{modelswap}:store:tally:swaps",
    ]);
  });
});
