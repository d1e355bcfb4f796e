/** What one worker's processor has done: jobs running now, and jobs started since the process began. */
export interface WorkerJobs {
  running: number;
  started: number;
}

/**
 * Counts the jobs this process's workers are running, so a stop knows whether anything is left to wait
 * for: with none running there is no safe point to reach, and no reason to wait out the grace period for
 * BullMQ's close(), which waits for Redis when Redis is away. Counted by queue as well, so a worker that
 * stopped taking jobs can be told from one that is busy (worker-stall.ts).
 */
export class InFlight {
  private running = 0;
  private waiters: (() => void)[] = [];
  private readonly byQueue = new Map<string, WorkerJobs>();

  /** The processor of `queue`'s worker, counted while each of its calls runs. */
  track<A extends unknown[], R>(
    queue: string,
    processor: (...args: A) => Promise<R>,
  ): (...args: A) => Promise<R> {
    return async (...args: A) => {
      const jobs = this.of(queue);
      this.byQueue.set(queue, jobs);
      this.running += 1;
      jobs.running += 1;
      jobs.started += 1;
      try {
        return await processor(...args);
      } finally {
        this.running -= 1;
        jobs.running -= 1;
        if (this.running === 0) for (const wake of this.waiters.splice(0)) wake();
      }
    };
  }

  get count(): number {
    return this.running;
  }

  /** `queue`'s worker's jobs (zeros before its first). */
  of(queue: string): WorkerJobs {
    return this.byQueue.get(queue) ?? { running: 0, started: 0 };
  }

  /** Settles once no job runs: at once when none does. */
  idle(): Promise<void> {
    if (this.running === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}
