/**
 * Counts the jobs this process's workers are running, so a stop knows whether anything is left to wait
 * for: with none running there is no safe point to reach, and no reason to wait out the grace period for
 * BullMQ's close(), which waits for Redis when Redis is away.
 */
export class InFlight {
  private running = 0;
  private waiters: (() => void)[] = [];

  /** The processor, counted while each of its calls runs. */
  track<A extends unknown[], R>(processor: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
    return async (...args: A) => {
      this.running += 1;
      try {
        return await processor(...args);
      } finally {
        this.running -= 1;
        if (this.running === 0) for (const wake of this.waiters.splice(0)) wake();
      }
    };
  }

  get count(): number {
    return this.running;
  }

  /** Settles once no job runs: at once when none does. */
  idle(): Promise<void> {
    if (this.running === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}
