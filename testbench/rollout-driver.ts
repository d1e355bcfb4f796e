import type { RolloutRecord } from "../src/rollout/rollout-record.ts";
import type { SwapRecord } from "../src/swap/swap-record.ts";
import type { Bench } from "./bench.ts";
import { CHANNEL, USERS } from "./bench.ts";
import type { SlackMessage } from "./slack/index.ts";
import type { SwapDriver } from "./swap-driver.ts";

/**
 * Drives rollouts on the bench as people do (`/llm swap … --group`, the Approve button, the card) and reads
 * what the bot kept (the rollout's record, its hosts' swaps).
 */
export class RolloutDriver {
  constructor(
    private readonly bench: Bench,
    private readonly swaps: SwapDriver,
  ) {}

  /**
   * `/llm swap <args>` by alice: the rollout's card, once posted, and its id. On a loaded machine Slack's
   * 3 s for the ack can pass while the bot still queues the rollout (Slack then shows the user an
   * operation_timeout): its card is looked for as a person would, the first rollout card posted since.
   */
  async request(args: string, timeoutMs = 30_000): Promise<{ card: SlackMessage; id: string }> {
    const before = this.bench.slack.messages(CHANNEL).length;
    const ack = await this.bench.slack.command(USERS.alice, `swap ${args}`, { channel: CHANNEL });
    const text = ack.ackResponse?.text ?? "";
    // its own id is the last the answer names (a rollback of a rollout names the one it takes back first)
    const acked = [...text.matchAll(/rollout `(ro-[a-z0-9-]+)`/g)].at(-1)?.[1];
    if (acked === undefined && ack.ackResponse !== undefined)
      throw new Error(`/llm swap ${args} queued no rollout: ${text}`);
    const card = await this.bench.slack.waitFor(
      () =>
        this.bench.slack
          .messages(CHANNEL)
          .slice(acked === undefined ? before : 0)
          .find(
            (m) =>
              m.thread_ts === undefined &&
              m.text.startsWith("Rollout:") &&
              (acked === undefined || JSON.stringify(m.blocks ?? []).includes(acked)),
          ),
      { what: `the card of the rollout /llm swap ${args} asked for`, timeoutMs },
    );
    const id = acked ?? /Rollout `(ro-[a-z0-9-]+)`/.exec(JSON.stringify(card.blocks ?? []))?.[1];
    if (id === undefined) throw new Error(`the rollout card ${card.ts} names no rollout id`);
    return { card, id };
  }

  /** The rollout's plan with its Approve button, in the card's thread (the latest, when put up again). */
  async plan(card: SlackMessage, timeoutMs = 90_000): Promise<SlackMessage> {
    return await this.bench.slack.waitFor(
      () => this.plansOf(card).findLast((m) => JSON.stringify(m.blocks ?? []).includes("swap_approve")),
      {
        what: "the rollout's plan with its Approve button",
        timeoutMs,
      },
    );
  }

  plansOf(card: SlackMessage): SlackMessage[] {
    return this.bench.slack.thread(CHANNEL, card.ts).filter((m) => m.text.startsWith("Rollout plan"));
  }

  /** bob clicks Approve on the plan. */
  async approve(card: SlackMessage): Promise<void> {
    const plan = await this.plan(card);
    const id = /`(ro-[a-z0-9-]+)`/.exec(JSON.stringify(this.card(card).blocks))?.[1];
    await this.bench.slack.clickButton(USERS.bob, CHANNEL, plan.ts, "swap_approve", id);
  }

  card(card: SlackMessage): SlackMessage {
    const now = this.bench.slack.message(CHANNEL, card.ts);
    if (now === undefined) throw new Error(`the rollout's card ${card.ts} is gone`);
    return now;
  }

  /**
   * Waits until the card's blocks match (`/Rolled out/`, `/Halted/`), then until its thread has caught up
   * (its closing line posted): an ended rollout's card is edited before its last lines, which can wait
   * behind its hosts' posts in a busy channel.
   */
  async outcome(card: SlackMessage, pattern: RegExp, timeoutMs = 240_000): Promise<void> {
    await this.bench.slack.waitFor(() => pattern.test(JSON.stringify(this.card(card).blocks ?? [])), {
      what: `the rollout's card to match ${pattern}`,
      timeoutMs,
    });
    await this.bench.slack.waitFor(
      () =>
        /\*Rolled out\*|\*Rollout halted\*|\*Rollout cancelled\*|Rollout (failed|rejected|expired)/.test(
          this.threadText(card),
        ),
      { what: "the rollout's thread to say how it ended", timeoutMs },
    );
  }

  threadText(card: SlackMessage): string {
    return this.bench.slack
      .thread(CHANNEL, card.ts)
      .map((m) => m.text)
      .join("\n");
  }

  /** Rollout cards in the channel for this id (a crash must never leave a second one). */
  cardsOf(id: string): SlackMessage[] {
    return this.bench.slack
      .messages(CHANNEL)
      .filter(
        (m) =>
          m.thread_ts === undefined &&
          m.text.startsWith("Rollout:") &&
          JSON.stringify(m.blocks ?? []).includes(id),
      );
  }

  async record(id: string): Promise<RolloutRecord> {
    const record = await (await this.swaps.store()).rollouts.get(id);
    if (record === undefined) throw new Error(`no rollout ${id}`);
    return record;
  }

  /** The rollout's hosts' swaps, by host. */
  async children(id: string): Promise<Map<string, SwapRecord>> {
    const record = await this.record(id);
    const out = new Map<string, SwapRecord>();
    for (const h of record.hosts) {
      const child = await this.swaps.record(h.swapId);
      if (child !== undefined) out.set(h.host, child);
    }
    return out;
  }
}
