import { Redis } from "ioredis";
import { afterAll, beforeAll } from "vitest";
import { Store } from "../../src/store/store.ts";
import type { SwapRecord } from "../../src/swap/swap-record.ts";
import { type Bench, type BenchOptions, CHANNEL, startBench, USERS } from "../../testbench/bench.ts";
import { makeModel } from "../../testbench/hub/index.ts";
import type { SlackMessage } from "../../testbench/slack/index.ts";

/**
 * The bench of a swap test file: started before its tests (quick polling, Slack's limits scaled up so
 * only the code under test paces), stopped after them; `ready` hands the bench and a SwapDriver over.
 * `startBot` runs the bot in this process (tests that kill it use bench.spawnBot() instead).
 */
export function useSwapBench(
  options: BenchOptions & { startBot?: boolean },
  ready: (bench: Bench, swaps: SwapDriver) => void,
): void {
  let bench: Bench | undefined;
  let swaps: SwapDriver | undefined;
  beforeAll(async () => {
    const { startBot, ...benchOptions } = options;
    bench = await startBench({
      ...benchOptions,
      swaps: { pollSeconds: 0.3, cardUpdateSeconds: 1, ...benchOptions.swaps },
    });
    bench.slack.setRateLimits({ scale: 100 });
    if (startBot === true) await bench.startBot();
    swaps = new SwapDriver(bench);
    ready(bench, swaps);
  }, 120_000);
  afterAll(async () => {
    await swaps?.close();
    await bench?.stop();
  });
}

/** Adds a small, ungated BF16 model `sim-org/<name>` to the bench's Hub; returns its id. */
export function addSimModel(bench: Bench, name: string): string {
  const id = `sim-org/${name}`;
  bench.hub.addModel(makeModel("llama-bf16-small", { id, gated: false }));
  return id;
}

/**
 * What the fault-injection tests share: driving a swap from Slack as people do, and reading the swap's
 * record straight from Redis to know where it is (the moment to inject a fault).
 */
export class SwapDriver {
  private readonly redis: Redis;
  private readonly store: Store;

  constructor(private readonly bench: Bench) {
    this.redis = new Redis(bench.redis.url, { maxRetriesPerRequest: null, lazyConnect: true });
    this.redis.on("error", () => undefined); // tests restart redis-server on purpose
    this.store = new Store(this.redis);
  }

  /** `/llm swap <model>` by alice; resolves with the swap's card once it is posted. */
  async request(model: string, host: string): Promise<SlackMessage> {
    const before = new Set(this.bench.slack.messages(CHANNEL).map((m) => m.ts));
    const ack = await this.bench.slack.command(USERS.alice, `swap ${model} --host ${host}`, {
      channel: CHANNEL,
    });
    if (ack.status !== 200 || !/Swap queued/.test(ack.ackResponse?.text ?? "")) {
      throw new Error(`the swap was not queued: ${ack.status} ${ack.ackResponse?.text}`);
    }
    return await this.bench.slack.waitFor(
      () =>
        this.bench.slack
          .messages(CHANNEL)
          .find((m) => !before.has(m.ts) && m.thread_ts === undefined && m.text.includes(`→ ${host}`)),
      { what: `the card of the swap to ${model}`, timeoutMs: 30_000 },
    );
  }

  card(cardTs: string): SlackMessage {
    const card = this.bench.slack.message(CHANNEL, cardTs);
    if (card === undefined) throw new Error(`no message ${cardTs}`);
    return card;
  }

  swapId(cardTs: string): string {
    const id = /swap `([^`]+)`/.exec(JSON.stringify(this.card(cardTs).blocks))?.[1];
    if (id === undefined) throw new Error("the card names no swap id");
    return id;
  }

  /** The plan message (with its Approve button) in the card's thread. */
  async plan(cardTs: string, timeoutMs = 60_000): Promise<SlackMessage> {
    return await this.bench.slack.waitFor(
      () =>
        this.bench.slack
          .thread(CHANNEL, cardTs)
          .findLast((m) => JSON.stringify(m.blocks).includes("swap_approve")),
      { what: "the plan with its Approve button", timeoutMs },
    );
  }

  /** bob approves the plan with a ✅. */
  async approve(cardTs: string): Promise<void> {
    const plan = await this.plan(cardTs);
    await this.bench.slack.react(USERS.bob, CHANNEL, plan.ts, "white_check_mark");
  }

  async outcome(cardTs: string, pattern: RegExp, timeoutMs = 120_000): Promise<SlackMessage> {
    return await this.bench.slack.waitFor(
      () => (pattern.test(this.card(cardTs).text) ? this.card(cardTs) : undefined),
      { what: `the card to match ${pattern}`, timeoutMs },
    );
  }

  /** Top-level cards of a swap (a crash must never leave a second one behind). */
  cardsOf(swapId: string): SlackMessage[] {
    return this.bench.slack
      .messages(CHANNEL)
      .filter((m) => m.thread_ts === undefined && JSON.stringify(m.blocks ?? []).includes(`\`${swapId}\``));
  }

  /** Plan messages in a swap's thread. */
  plansOf(cardTs: string): SlackMessage[] {
    return this.bench.slack.thread(CHANNEL, cardTs).filter((m) => m.text.startsWith("Swap plan:"));
  }

  threadText(cardTs: string): string {
    return this.bench.slack
      .thread(CHANNEL, cardTs)
      .map((m) => `${m.text}\n${JSON.stringify(m.blocks ?? [])}`)
      .join("\n");
  }

  /** The swap's record as the workers see it. */
  async record(swapId: string): Promise<SwapRecord | undefined> {
    if (this.redis.status === "wait") await this.redis.connect();
    return await this.store.swaps.get(swapId);
  }

  /** Waits until the swap's record satisfies `test` (polled every 50 ms). */
  async until(
    swapId: string,
    what: string,
    test: (r: SwapRecord) => boolean,
    timeoutMs = 60_000,
  ): Promise<SwapRecord> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const record = await this.record(swapId).catch(() => undefined);
      if (record !== undefined && test(record)) return record;
      if (Date.now() > deadline) {
        throw new Error(`timed out waiting for ${what}; the swap is at step ${record?.step ?? "?"}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** The BullMQ job of a swap: which worker (by name) last took it. */
  async processedBy(swapId: string): Promise<string | undefined> {
    if (this.redis.status === "wait") await this.redis.connect();
    return (await this.redis.hget(`{modelswap}:swaps:${swapId}`, "pb")) ?? undefined;
  }

  /**
   * Waits until the process `pid` has taken the swap's job (BullMQ's processedBy); the ms from `since`
   * until then, or 0 when it did not within `timeoutMs`.
   */
  async takenBy(swapId: string, pid: number, since: number, timeoutMs: number): Promise<number> {
    while (Date.now() - since < timeoutMs) {
      if ((await this.processedBy(swapId))?.endsWith(`:${pid}`)) return Date.now() - since;
      await new Promise((r) => setTimeout(r, 50));
    }
    return 0;
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}

/** How many times a unit was started on a sim host (systemd's "Started …" journal lines). */
export async function startsOf(bench: Bench, host: string, unit: string): Promise<number> {
  const journal = await bench.host(host).sim.journal(unit);
  return journal.split("\n").filter((l) => /^Started /.test(l)).length;
}

/** The unit a plan installs, from the swap record. */
export function unitOf(record: SwapRecord | undefined): string {
  const unit = record?.plan?.unitName;
  if (unit === undefined) throw new Error("the swap has no plan yet");
  return unit;
}

/** How many `hf download` processes are alive on a sim host (zombies count as gone). */
export async function liveDownloads(bench: Bench, host: string): Promise<number> {
  const alive = await bench
    .host(host)
    .sim.exec("ps -eo stat=,args= | grep -E 'hf(\\.mjs)? download' | grep -v grep | grep -v '^Z' | wc -l");
  return Number(alive.stdout.trim());
}
