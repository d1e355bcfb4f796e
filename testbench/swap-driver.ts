import { readFile } from "node:fs/promises";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { SWAP_QUEUE } from "../src/queue/swap-queue.ts";
import type { RedisClient } from "../src/redis/redis-client.ts";
import { QUEUE_PREFIX } from "../src/store/keys.ts";
import { Store } from "../src/store/store.ts";
import type { Decision, SwapRecord } from "../src/swap/swap-record.ts";
import { type Bench, CHANNEL, USERS } from "./bench.ts";
import { makeModel } from "./hub/index.ts";
import type { CommandResult, SlackMessage } from "./slack/index.ts";
import { type UntilOptions, until } from "./until.ts";

export interface SwapDriverOptions {
  /**
   * The Redis the bot uses, as a URL or a connection (not closed by the driver): by default the bench's
   * redis-server. A test that points the bot elsewhere (a cluster, a password behind a sentinel) says so.
   */
  redis?: string | RedisClient;
  /**
   * How long a card or a plan may take to appear (default 30 s and 60 s). Many swaps in one channel wait
   * their turn: Slack takes about one chat.postMessage a second per channel, and the bot paces itself so.
   */
  postWithinMs?: number;
}

/**
 * Drives swaps as people do, from Slack (a `/llm swap`, a ✅ on the plan), and reads where they are the
 * way the bot does: the swap's record through the product's own `Store` (never by Redis key: the
 * record's keys and shape belong to the product), its BullMQ job through BullMQ. For the e2e and fault
 * tests and the benchmarks alike; it never asserts, it waits and throws naming what it waited for.
 *
 * Cards are addressed by their `ts` (the value `request` resolves with), swaps by their id.
 */
export class SwapDriver {
  private connection: RedisClient | undefined;
  private swapStore: Store | undefined;
  private swapQueue: Queue | undefined;

  constructor(
    private readonly bench: Bench,
    private readonly options: SwapDriverOptions = {},
  ) {}

  // ------------------------------------------------------------------------------------------- Slack

  /**
   * `/llm <text>` by `user` in the channel; resolves with the first channel message posted after it that
   * `matches` (a shared answer: `--share`, or one the worker posts, such as `/llm history`).
   */
  async channelAnswer(
    user: string,
    text: string,
    matches: (m: SlackMessage) => boolean,
    timeoutMs = 15_000,
  ): Promise<SlackMessage> {
    const slack = this.bench.slack;
    const before = slack.messages(CHANNEL).length;
    await slack.command(user, text, { channel: CHANNEL });
    return await slack.waitFor(() => slack.messages(CHANNEL).slice(before).find(matches), {
      timeoutMs,
      what: `the answer to /llm ${text}`,
    });
  }

  /**
   * `/llm swap <model> --host <host>` by `user` (alice unless told); resolves with the swap's card once
   * it is posted. `model` is everything before `--host`: flags may follow it (`x/y --dry-run`). Throws
   * when the swap was not queued (the ack says why).
   */
  async request(
    model: string,
    host: string,
    { user = USERS.alice }: { user?: string } = {},
  ): Promise<SlackMessage> {
    const cardsBefore = new Set(this.cards().map((m) => m.ts));
    const ack = await this.bench.slack.command(user, `swap ${model} --host ${host}`, { channel: CHANNEL });
    this.lastAck = ack;
    const text = ack.ackResponse?.text ?? "";
    const id = /^(?:🔄 Swap queued|📝 Planning \(dry run\)).*\(swap `(sw-[a-z0-9-]+)`\)/.exec(text)?.[1];
    if (id !== undefined)
      return await this.bench.slack.waitFor(() => this.cardsOf(id)[0], {
        what: `the card of swap ${id} (${model} → ${host})`,
        timeoutMs: this.options.postWithinMs ?? 30_000,
      });
    // Slack stopped waiting for the ack (3 s: on a loaded 2-core machine the bot's queueing can take
    // longer). The user sees operation_timeout, but the bot goes on and queues the swap: as a person would,
    // look for the card it then posts, of this model on this host.
    const card = ack.timedOut
      ? await this.bench.slack
          .waitFor(() => this.cards().find((m) => !cardsBefore.has(m.ts) && cardNames(m, model, host)), {
            what: `a card of ${model} on ${host} after the ack timed out`,
            timeoutMs: 30_000,
          })
          .catch(() => undefined)
      : undefined;
    if (card !== undefined) return card;
    const how = ack.timedOut
      ? `Slack stopped waiting after ${Math.round(ack.ackMs)} ms and no card came`
      : ack.networkError !== undefined
        ? `the bot could not be reached: ${ack.networkError}`
        : `HTTP ${ack.status} ${text}`;
    throw new Error(`/llm swap ${model} --host ${host} was not queued: ${how}`);
  }

  /** The card as it reads now (cards are edited in place). */
  card(cardTs: string): SlackMessage {
    const card = this.bench.slack.message(CHANNEL, cardTs);
    if (card === undefined) throw new Error(`no message ${cardTs} in ${CHANNEL}`);
    return card;
  }

  /** The id of the swap a card shows. */
  swapId(cardTs: string): string {
    const id = /swap `([^`]+)`/.exec(JSON.stringify(this.card(cardTs).blocks))?.[1];
    if (id === undefined) throw new Error(`the card ${cardTs} names no swap id`);
    return id;
  }

  /** The plan message with its Approve button, in the card's thread (the latest, when re-planned). */
  async plan(cardTs: string, timeoutMs = this.options.postWithinMs ?? 60_000): Promise<SlackMessage> {
    return await this.bench.slack.waitFor(
      () =>
        this.bench.slack
          .thread(CHANNEL, cardTs)
          .findLast((m) => JSON.stringify(m.blocks ?? []).includes("swap_approve")),
      { what: `the plan with its Approve button in the thread of ${cardTs}`, timeoutMs },
    );
  }

  /** A dry run's plan (no buttons: it is shown, never approved), once its swap has ended. */
  async dryRunPlan(cardTs: string): Promise<SlackMessage> {
    await this.untilRecord(this.swapId(cardTs), (r) => r.step === "done", { what: "the dry run's end" });
    return await until(() => this.plansOf(cardTs).at(-1), {
      what: `the dry run's plan (${this.card(cardTs).text})`,
    });
  }

  /** `by` (bob unless told) approves the plan with a ✅, once it is posted. */
  async approve(cardTs: string, by: string = USERS.bob): Promise<void> {
    await this.react(cardTs, by, "white_check_mark");
  }

  /** `by` (bob unless told) rejects the plan with a ❌, once it is posted. */
  async reject(cardTs: string, by: string = USERS.bob): Promise<void> {
    await this.react(cardTs, by, "x");
  }

  /** Waits until the card's text matches (`/Swapped/`, `/Rolled back/`, …); the card then. */
  async outcome(cardTs: string, pattern: RegExp, timeoutMs = 120_000): Promise<SlackMessage> {
    return await this.bench.slack.waitFor(
      () => (pattern.test(this.card(cardTs).text) ? this.card(cardTs) : undefined),
      { what: `the card ${cardTs} to match ${pattern}`, timeoutMs },
    );
  }

  /**
   * The swap's final line, broadcast to the channel from its thread: the last thing a finished swap
   * posts (the card says Swapped a moment before the chart and this line). Not for dry runs, whose final
   * line stays in the thread.
   */
  async finalLine(cardTs: string, timeoutMs = 120_000): Promise<SlackMessage> {
    return await this.bench.slack.waitFor(
      () => this.bench.slack.thread(CHANNEL, cardTs).find((m) => m.reply_broadcast === true),
      { what: `the final line of the swap of ${cardTs}, broadcast`, timeoutMs },
    );
  }

  /** Top-level cards of a swap (a crash or a retried delivery must never leave a second one behind). */
  /** The delivery of the last request()'s command: whether Slack got the ack in time. */
  lastAck: CommandResult | undefined;

  /** Every swap card in the channel (top-level messages naming a swap id). */
  cards(): SlackMessage[] {
    return this.bench.slack
      .messages(CHANNEL)
      .filter((m) => m.thread_ts === undefined && /`sw-[a-z0-9-]+`/.test(JSON.stringify(m.blocks ?? [])));
  }

  cardsOf(swapId: string): SlackMessage[] {
    return this.cards().filter((m) => JSON.stringify(m.blocks ?? []).includes(`\`${swapId}\``));
  }

  /** Plan messages in a card's thread. */
  plansOf(cardTs: string): SlackMessage[] {
    return this.bench.slack.thread(CHANNEL, cardTs).filter((m) => m.text.startsWith("Swap plan:"));
  }

  /** The latest plan's details, once posted (under the plan, right after it). */
  async planDetails(cardTs: string, timeoutMs = this.options.postWithinMs ?? 60_000): Promise<SlackMessage> {
    return await this.bench.slack.waitFor(() => this.planDetailsOf(cardTs).at(-1), {
      what: `the plan's details in the thread of ${cardTs}`,
      timeoutMs,
    });
  }

  /** The plans' details (every check's figures, the command, each flag's reason, the unit diff), oldest first. */
  planDetailsOf(cardTs: string): SlackMessage[] {
    return this.bench.slack.thread(CHANNEL, cardTs).filter((m) => /^How swap \S+ was planned/.test(m.text));
  }

  /** Everything the card's thread says, text and blocks, for matching. */
  threadText(cardTs: string): string {
    return this.bench.slack
      .thread(CHANNEL, cardTs)
      .map((m) => `${m.text}\n${JSON.stringify(m.blocks ?? [])}`)
      .join("\n");
  }

  /** What the bot told `user` privately about one swap (its id is in every such answer), oldest first. */
  toldAbout(swapId: string, user: string): string[] {
    return this.bench.slack
      .ephemerals(CHANNEL, user)
      .map((e) => e.text)
      .filter((t) => t.includes(swapId));
  }

  // -------------------------------------------------------------------------------- the bot's records

  /** The product's store, on the driver's connection: for the reads this class has no name for. */
  async store(): Promise<Store> {
    if (this.swapStore === undefined) {
      this.swapStore = new Store(await this.redis());
    }
    return this.swapStore;
  }

  /** The swap's record as the workers see it. */
  async record(swapId: string): Promise<SwapRecord | undefined> {
    return await (await this.store()).swaps.get(swapId);
  }

  /**
   * Waits until the swap's record satisfies `test` (polled every 50 ms; a Redis that is restarting counts
   * as not yet); the record then. The timeout names `what` and the step the swap is at.
   */
  async untilRecord(
    swapId: string,
    test: (record: SwapRecord) => boolean,
    { what, timeoutMs = 60_000 }: Omit<UntilOptions, "intervalMs">,
  ): Promise<SwapRecord> {
    let last: SwapRecord | undefined;
    try {
      return await until(
        async () => {
          const record = await this.record(swapId).catch(() => undefined);
          if (record !== undefined) last = record;
          return record !== undefined && test(record) && record;
        },
        { what, timeoutMs },
      );
    } catch (error) {
      throw new Error(`${(error as Error).message}; swap ${swapId} is at step ${last?.step ?? "?"}`);
    }
  }

  /** The decision that stands on the swap's current plan (none before the plan, or before anyone decided). */
  async decision(swapId: string): Promise<Decision | undefined> {
    const record = await this.record(swapId);
    if (record?.planHash === undefined) return undefined;
    return await (await this.store()).approvals.decision(swapId, record.planHash);
  }

  /** Waits until a decision on the swap's plan is recorded (a click or reaction is acked before that). */
  async untilDecided(swapId: string, timeoutMs = 20_000): Promise<Decision> {
    return await until(() => this.decision(swapId), { what: `a decision on swap ${swapId}`, timeoutMs });
  }

  /** The BullMQ job of a swap: which worker (`<host>:<pid>`) last took it. */
  async processedBy(swapId: string): Promise<string | undefined> {
    const job = await (await this.queue()).getJob(swapId);
    return job?.processedBy ?? undefined;
  }

  /** The state of the swap's BullMQ job (`delayed` while it waits, `completed` once it ended), if any. */
  async jobState(swapId: string): Promise<string | undefined> {
    const job = await (await this.queue()).getJob(swapId);
    return job === undefined ? undefined : await job.getState();
  }

  /**
   * Waits until the process `pid` has taken the swap's job (BullMQ's processedBy); the ms from `since`
   * until then, or 0 when it did not within `timeoutMs` (a figure for the benchmarks, a check for tests).
   */
  async takenBy(swapId: string, pid: number, since: number, timeoutMs: number): Promise<number> {
    try {
      return await until(
        async () => ((await this.processedBy(swapId))?.endsWith(`:${pid}`) ? Date.now() - since : undefined),
        {
          what: `process ${pid} to take swap ${swapId}`,
          timeoutMs: Math.max(0, since + timeoutMs - Date.now()),
        },
      );
    } catch (error) {
      if (Date.now() - since >= timeoutMs) return 0;
      throw error;
    }
  }

  // ----------------------------------------------------------------------------------------- hosts

  /** How many times a unit was started on a sim host (systemd's "Started …" journal lines). */
  async startsOf(host: string, unit: string): Promise<number> {
    const journal = await this.bench.host(host).sim.journal(unit);
    return journal.split("\n").filter((l) => /^Started /.test(l)).length;
  }

  /** How many times a unit was stopped on a sim host (systemd's "Stopped …" journal lines). */
  async stopsOf(host: string, unit: string): Promise<number> {
    const journal = await this.bench.host(host).sim.journal(unit);
    return journal.split("\n").filter((l) => /^Stopped /.test(l)).length;
  }

  /** How many `hf download` processes are alive on a sim host (zombies count as gone). */
  async liveDownloads(host: string): Promise<number> {
    const alive = await this.bench
      .host(host)
      .sim.exec("ps -eo stat=,args= | grep -E 'hf(\\.mjs)? download' | grep -v grep | grep -v '^Z' | wc -l");
    return Number(alive.stdout.trim());
  }

  async close(): Promise<void> {
    await this.swapQueue?.close().catch(() => undefined);
    if (typeof this.options.redis !== "object") this.connection?.disconnect();
  }

  private async react(cardTs: string, by: string, name: string): Promise<void> {
    const plan = await this.plan(cardTs);
    const delivered = await this.bench.slack.react(by, CHANNEL, plan.ts, name);
    if (delivered.status !== 200) throw new Error(`the :${name}: by ${by} was answered ${delivered.status}`);
  }

  private async redis(): Promise<RedisClient> {
    if (this.connection === undefined) {
      const given = this.options.redis;
      if (typeof given === "object") this.connection = given;
      else {
        // tests restart redis-server on purpose: commands wait for the reconnect instead of failing
        this.connection = new Redis(given ?? this.bench.redis.url, { maxRetriesPerRequest: null });
        this.connection.on("error", () => undefined);
      }
    }
    return this.connection;
  }

  private async queue(): Promise<Queue> {
    if (this.swapQueue === undefined) {
      this.swapQueue = new Queue(SWAP_QUEUE, { connection: await this.redis(), prefix: QUEUE_PREFIX });
      this.swapQueue.on("error", () => undefined);
    }
    return this.swapQueue;
  }
}

/** Adds a small, ungated BF16 model `sim-org/<name>` to the bench's Hub; returns its id. */
export function addSimModel(bench: Bench, name: string): string {
  const id = `sim-org/${name}`;
  bench.hub.addModel(makeModel("llama-bf16-small", { id, gated: false }));
  return id;
}

/** The unit a swap's plan installs, from its record. */
export function unitOf(record: SwapRecord | undefined): string {
  const unit = record?.plan?.unitName;
  if (unit === undefined) throw new Error("the swap has no plan yet");
  return unit;
}

/** The complete lines of a log file (a line still being written is left out), or none before it exists. */
export async function logLines(path: string): Promise<string[]> {
  const text = await readFile(path, "utf8").catch(() => "");
  return text.split("\n").slice(0, -1);
}

/**
 * Waits until the log file at `path` holds `count` (default 1) complete lines that match; those lines.
 * The bot's logger writes asynchronously: a line lands a moment after what it tells of.
 */
export async function waitForLog(
  path: string,
  pattern: RegExp | ((line: string) => boolean),
  { count = 1, what, timeoutMs = 30_000 }: { count?: number; what?: string; timeoutMs?: number } = {},
): Promise<string[]> {
  const matches = (line: string) => (typeof pattern === "function" ? pattern(line) : pattern.test(line));
  return await until(
    async () => {
      const lines = (await logLines(path)).filter(matches);
      return lines.length >= count && lines;
    },
    { what: `${what ?? `${count} line(s) matching ${pattern}`} in ${path}`, timeoutMs },
  );
}

/** Whether a card is of `model` (its repo, before any `--` flag) on `host`. */
function cardNames(card: SlackMessage, model: string, host: string): boolean {
  const blocks = JSON.stringify(card.blocks ?? []);
  const repo = model
    .split(/\s/)[0]!
    .replace(/^https:\/\/huggingface\.co\//, "")
    .split("/tree/")[0]!;
  return blocks.includes(repo) && blocks.includes(host);
}
