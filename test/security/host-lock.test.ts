import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { newSwapId } from "../../src/grammar/swap-id.ts";
import { parseSwapRequest } from "../../src/grammar/swap-request.ts";
import { SwapQueue } from "../../src/queue/swap-queue.ts";
import { newStages, type SwapRecord } from "../../src/swap/swap-record.ts";
import type { Bench } from "../../testbench/bench.ts";
import { CHANNEL, USERS } from "../../testbench/bench.ts";
import { makeModel } from "../../testbench/hub/index.ts";
import type { SlackMessage } from "../../testbench/slack/index.ts";
import type { SwapDriver } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * A host lock always belongs to a live swap (issue #12, item 5). The lock had no TTL and nothing looked
 * at who held it: a bot that stopped between taking the lock and queueing the swap's job (record saved,
 * no job) locked the host for good, and `/llm cancel` answered "✋ Cancelling…" while nothing would ever
 * act on it. Now a lock is reconciled against its swap's BullMQ job: `/llm status` shows a stuck lock
 * and the command that clears it, `/llm cancel <swap or host>` clears it and says so, a new `/llm swap`
 * clears it by itself, and the lock of a swap whose job is alive (waiting for approval) is never cleared.
 *
 * The crash is simulated the way it leaves Redis: the product's own store takes the lock and saves the
 * record (as `/llm swap` does), and no job is added. Its id and record are 10 minutes old (the bot
 * stopped a while ago), past the moment a request in progress would still be queueing its job.
 */
const QWEN = "nvidia/Qwen3.5-397B-A17B-NVFP4";
const MINUTE = 60_000;

let bench: Bench;
let swaps: SwapDriver;
let redis: Redis | undefined;
let queue: SwapQueue | undefined;
useSwapBench(
  {
    hosts: [
      { name: "gpu-1", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } },
      { name: "gpu-2", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } },
      { name: "gpu-3", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } },
      { name: "gpu-4", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } },
      { name: "gpu-5", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } },
      { name: "gpu-6", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } },
    ],
    startBot: true,
  },
  (b, s) => {
    bench = b;
    swaps = s;
    bench.hub.addModel(makeModel("qwen3.5-moe-nvfp4"));
  },
);
afterAll(async () => {
  await queue?.close();
  redis?.disconnect();
});

function swapQueue(): SwapQueue {
  if (queue === undefined) {
    redis = new Redis(bench.redis.url, { maxRetriesPerRequest: null });
    queue = new SwapQueue(redis);
  }
  return queue;
}

/**
 * What a bot that stopped between `lockHost` and `enqueue` left behind, `minutesAgo`: the host lock and
 * (unless `saved` is false: it stopped before saving) the swap's record with its request audited.
 */
async function crashedRequest(
  host: string,
  { saved = true, minutesAgo = 10 }: { saved?: boolean; minutesAgo?: number } = {},
): Promise<SwapRecord> {
  const at = Date.now() - minutesAgo * MINUTE;
  const id = newSwapId(at);
  const parsed = parseSwapRequest([QWEN, "--host", host]);
  if (!parsed.ok) throw new Error(parsed.reason);
  const record: SwapRecord = {
    id,
    host,
    requester: USERS.alice,
    channel: CHANNEL,
    createdAt: new Date(at).toISOString(),
    request: parsed.request,
    step: "resolve",
    stages: newStages(),
    tasks: {},
  };
  const store = await swaps.store();
  expect(await store.locks.lockHost(host, id)).toEqual({ ok: true });
  if (saved) {
    await store.swaps.save(record, {
      audit: [{ at: record.createdAt, kind: "request", who: USERS.alice, host, swap: id, detail: QWEN }],
    });
  }
  return record;
}

async function holder(host: string): Promise<string | undefined> {
  return await (await swaps.store()).locks.hostHolder(host);
}

async function ack(user: string, text: string): Promise<string> {
  const answer = await bench.slack.command(user, text, { channel: CHANNEL });
  expect(answer.status).toBe(200);
  return answer.ackResponse?.text ?? "";
}

async function statusOf(host: string): Promise<SlackMessage> {
  const before = bench.slack.messages(CHANNEL).length;
  // --share: the status is posted in the channel (private to the asker by default)
  expect(await ack(USERS.alice, `status ${host} --share`)).toContain(`Checking ${host}`);
  return await bench.slack.waitFor(
    () =>
      bench.slack
        .messages(CHANNEL)
        .slice(before)
        .find((m) => m.text.includes(`${host}:`)),
    { timeoutMs: 20_000, what: `the status of ${host}` },
  );
}

const body = (message: SlackMessage) => `${message.text}\n${JSON.stringify(message.blocks ?? [])}`;

describe("a host lock whose swap has no job", () => {
  it("is shown by /llm status as stuck, with since when, why, and the command that clears it", async () => {
    const stuck = await crashedRequest("gpu-2");
    const status = body(await statusOf("gpu-2"));
    expect(status).toContain(`locked by swap \`${stuck.id}\``);
    expect(status).toContain(stuck.createdAt.slice(0, 16).replace("T", " "));
    expect(status).toContain("has no job");
    expect(status).toContain(`/llm cancel ${stuck.id}`);
    // looking clears nothing
    expect(await holder("gpu-2")).toBe(stuck.id);
    // the command it names does clear it
    expect(await ack(USERS.alice, `cancel ${stuck.id}`)).toContain("the lock is cleared");
    expect(body(await statusOf("gpu-2"))).not.toContain("locked by swap");
  }, 60_000);

  it('/llm cancel <swap> clears it and says so, instead of a "Cancelling…" that nothing acts on', async () => {
    const stuck = await crashedRequest("gpu-3");
    const answer = await ack(USERS.alice, `cancel ${stuck.id}`);
    expect(answer).toContain(`gpu-3*'s lock was held by swap \`${stuck.id}\``);
    expect(answer).toContain("has no job (the bot stopped before queueing it)");
    expect(answer).toContain("the lock is cleared and the swap marked cancelled");
    expect(answer).not.toContain("Cancelling");
    expect(await holder("gpu-3")).toBeUndefined();
    expect(await swaps.record(stuck.id)).toMatchObject({ outcome: "cancelled", step: "done" });
    // the cancel is audited, with who did it
    const audit = await (await swaps.store()).audit.read({ swap: stuck.id, limit: 10 });
    expect(audit).toContainEqual(
      expect.objectContaining({ kind: "cancel", who: USERS.alice, host: "gpu-3", swap: stuck.id }),
    );
    // cancelling again says it is over
    expect(await ack(USERS.alice, `cancel ${stuck.id}`)).toContain("already finished: cancelled");
  }, 30_000);

  it("/llm cancel <host> clears a lock whose swap was never even saved", async () => {
    const lost = await crashedRequest("gpu-4", { saved: false });
    const answer = await ack(USERS.bob, "cancel gpu-4");
    expect(answer).toContain(`gpu-4*'s lock was held by swap \`${lost.id}\``);
    expect(answer).toContain("has no record (the bot stopped before saving it)");
    expect(answer).toContain("the lock is cleared");
    expect(await holder("gpu-4")).toBeUndefined();
  }, 30_000);

  it("a new /llm swap on that host clears the stuck lock and is queued, saying so", async () => {
    const stuck = await crashedRequest("gpu-5");
    const answer = await ack(USERS.alice, `swap ${QWEN} --host gpu-5`);
    expect(answer).toMatch(/^🔄 Swap queued/);
    expect(answer).toContain(`lock was held by swap \`${stuck.id}\``);
    expect(answer).toContain("has no job (the bot stopped before queueing it)");
    const id = /\(swap `(sw-[a-z0-9-]+)`\)/.exec(answer)?.[1];
    expect(id).toBeDefined();
    expect(await holder("gpu-5")).toBe(id);
    expect(await swaps.record(stuck.id)).toMatchObject({ outcome: "failed", step: "done" });
    // the new swap is a live one: it plans and waits for approval; cancelled, it gives the host back
    await swaps.untilRecord(id!, (r) => r.stages.approval.state === "running", {
      what: "the new swap waiting for approval",
    });
    expect(await ack(USERS.alice, `cancel ${id}`)).toContain("Cancelling swap");
    await swaps.untilRecord(id!, (r) => r.outcome === "cancelled", { what: "the new swap cancelled" });
    expect(await holder("gpu-5")).toBeUndefined();
  }, 120_000);
});

describe("the lock of a live swap", () => {
  it("is never cleared: waiting for approval (job delayed) for a long time, it stays busy and cancels normally", async () => {
    // a swap requested 10 minutes ago whose job is alive: it waits for approval, parked as delayed
    const live = await crashedRequest("gpu-1");
    await swapQueue().enqueue(live.id);
    await swaps.untilRecord(live.id, (r) => r.stages.approval.state === "running", {
      what: "the old swap waiting for approval",
    });
    await until(async () => (await swaps.jobState(live.id)) === "delayed", {
      what: "its job parked as delayed",
    });

    const busy = await ack(USERS.alice, `swap ${QWEN} --host gpu-1`);
    expect(busy).toContain(`gpu-1 is busy: swap \`${live.id}\``);
    expect(await holder("gpu-1")).toBe(live.id);
    const status = body(await statusOf("gpu-1"));
    expect(status).toContain(`Swap \`${live.id}\``);
    expect(status).not.toContain("has no job");
    expect(await holder("gpu-1")).toBe(live.id);

    // /llm cancel <host> on a live swap is the ordinary cancel: the swap's own job ends it
    const answer = await ack(USERS.alice, "cancel gpu-1");
    expect(answer).toContain(`Cancelling swap \`${live.id}\``);
    expect(answer).not.toContain("lock is cleared");
    await swaps.untilRecord(live.id, (r) => r.outcome === "cancelled", { what: "the live swap cancelled" });
    await until(async () => (await holder("gpu-1")) === undefined, { what: "gpu-1 given back by its swap" });
  }, 120_000);
});

describe("a swap that lost its lock while it was being queued", () => {
  it("never runs on a host another swap holds; on a free host it takes the lock again", async () => {
    // its request stalled past the grace: its lock was judged stuck and cleared, another swap took gpu-6
    const late = await crashedRequest("gpu-6");
    const store = await swaps.store();
    await store.locks.unlockHost("gpu-6", late.id);
    const other = newSwapId();
    expect(await store.locks.lockHost("gpu-6", other)).toEqual({ ok: true });
    await swapQueue().enqueue(late.id);
    const ended = await swaps.untilRecord(late.id, (r) => r.outcome !== undefined, {
      what: "the late swap ended",
    });
    expect(ended).toMatchObject({ outcome: "failed" });
    expect(ended.reason).toContain(`gpu-6 is locked by swap ${other}: this swap lost its host lock`);
    expect(ended.plan).toBeUndefined();
    expect(await holder("gpu-6")).toBe(other);

    // the host free again: a late swap takes it back and runs as any swap
    await store.locks.unlockHost("gpu-6", other);
    const again = await crashedRequest("gpu-6");
    await store.locks.unlockHost("gpu-6", again.id);
    await swapQueue().enqueue(again.id);
    await swaps.untilRecord(again.id, (r) => r.stages.approval.state === "running", {
      what: "the late swap waiting for approval",
    });
    expect(await holder("gpu-6")).toBe(again.id);
    expect(await ack(USERS.alice, `cancel ${again.id}`)).toContain("Cancelling swap");
    await swaps.untilRecord(again.id, (r) => r.outcome === "cancelled", { what: "the late swap cancelled" });
    expect(await holder("gpu-6")).toBeUndefined();
  }, 120_000);
});
