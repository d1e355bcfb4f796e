/**
 * A token bucket: `take()` resolves when a call may go out without breaking the rate. Keeps the bot under
 * Slack's documented limits on its own, so a 429 (and its Retry-After stall) is the exception, not the
 * way the bot learns it was too fast.
 *
 * Calls wait in order, except that an urgent one goes ahead of every call that is not: with many swaps in
 * one channel (Slack takes about one post a second there) a plan someone must approve, or the outcome of
 * a swap that has ended, is not held behind the other swaps' progress messages.
 */
export class Pacer {
  private tokens: number;
  private last = Date.now();
  private readonly waiting: { urgent: boolean; tag: string | undefined; go: () => void }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private inFlight = 0;

  /**
   * `maxInFlight`: calls sent through `run` that may be waiting for their answer at once (default: no
   * bound). With 1, the next call leaves only once the previous one was answered, in the pacer's order.
   */
  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
    private readonly maxInFlight = Number.POSITIVE_INFINITY,
  ) {
    this.tokens = burst;
  }

  /**
   * Runs `call` when its turn comes (as `take`), counting it in flight until it settles. A call that had
   * its turn but then waited for another's answer would leave bunched with the ones behind it, and Slack
   * counts calls where they arrive: the turn is given only once a call may really leave.
   */
  async run<T>(call: () => Promise<T>, urgent = false, tag?: string): Promise<T> {
    await this.turn(urgent, tag);
    try {
      return await call();
    } finally {
      this.inFlight -= 1;
      this.pump();
    }
  }

  async take(urgent = false, tag?: string): Promise<void> {
    await this.turn(urgent, tag);
    this.inFlight -= 1; // nothing to wait for: the caller's call is its own business
    this.pump();
  }

  /** Resolves at the caller's turn, with the call counted in flight (the count goes up as it is granted). */
  private turn(urgent: boolean, tag: string | undefined): Promise<void> {
    return new Promise<void>((go) => {
      this.enqueue({
        urgent,
        tag,
        go: () => {
          this.inFlight += 1;
          go();
        },
      });
      this.pump();
    });
  }

  private enqueue(entry: { urgent: boolean; tag: string | undefined; go: () => void }): void {
    const firstNotUrgent = entry.urgent ? this.waiting.findIndex((w) => !w.urgent) : -1;
    if (firstNotUrgent === -1) this.waiting.push(entry);
    else this.waiting.splice(firstNotUrgent, 0, entry);
  }

  /**
   * The calls waiting with `tag` become urgent, in their order (a running swap's post, waiting behind
   * other swaps' urgent ones, when the swap has ended meanwhile and its outcome waits for it).
   */
  hurry(tag: string): void {
    const late = this.waiting.filter((w) => !w.urgent && w.tag === tag);
    if (late.length === 0) return;
    for (const entry of late) {
      this.waiting.splice(this.waiting.indexOf(entry), 1);
      entry.urgent = true;
      this.enqueue(entry);
    }
  }

  /** How many calls wait for their turn now. */
  get backlog(): number {
    return this.waiting.length;
  }

  private pump(): void {
    if (this.timer !== undefined) return;
    while (this.waiting.length > 0 && this.inFlight < this.maxInFlight) {
      const now = Date.now();
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.perSecond);
      this.last = now;
      if (this.tokens < 1) {
        this.timer = setTimeout(
          () => {
            this.timer = undefined;
            this.pump();
          },
          Math.ceil(((1 - this.tokens) / this.perSecond) * 1000),
        );
        return;
      }
      this.tokens -= 1;
      this.waiting.shift()?.go();
    }
  }
}
