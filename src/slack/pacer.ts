/**
 * A token bucket: `take()` resolves when a call may go out without breaking the rate. Keeps the bot under
 * Slack's documented limits on its own, so a 429 (and its Retry-After stall) is the exception, not the
 * way the bot learns it was too fast.
 */
export class Pacer {
  private tokens: number;
  private last = Date.now();
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
  ) {
    this.tokens = burst;
  }

  take(): Promise<void> {
    const turn = this.queue.then(() => this.wait());
    this.queue = turn.catch(() => undefined);
    return turn;
  }

  private async wait(): Promise<void> {
    for (;;) {
      const now = Date.now();
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.perSecond);
      this.last = now;
      if (this.tokens >= 1) {
        this.tokens -= 1;
        return;
      }
      await new Promise((resolve) =>
        setTimeout(resolve, Math.ceil(((1 - this.tokens) / this.perSecond) * 1000)),
      );
    }
  }
}
