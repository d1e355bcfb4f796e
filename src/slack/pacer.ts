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
  private readonly waiting: { urgent: boolean; go: () => void }[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
  ) {
    this.tokens = burst;
  }

  take(urgent = false): Promise<void> {
    return new Promise<void>((go) => {
      const entry = { urgent, go };
      const firstNotUrgent = urgent ? this.waiting.findIndex((w) => !w.urgent) : -1;
      if (firstNotUrgent === -1) this.waiting.push(entry);
      else this.waiting.splice(firstNotUrgent, 0, entry);
      this.pump();
    });
  }

  /** How many calls wait for their turn now. */
  get backlog(): number {
    return this.waiting.length;
  }

  private pump(): void {
    if (this.timer !== undefined) return;
    while (this.waiting.length > 0) {
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
