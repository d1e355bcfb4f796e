/** Timeouts that resolve to a value, all cleared at once when the race they were in is over. */
export class Timers {
  private readonly pending: NodeJS.Timeout[] = [];

  after<T>(ms: number, value: T): Promise<T> {
    return new Promise((resolve) => this.pending.push(setTimeout(() => resolve(value), ms)));
  }

  clear(): void {
    for (const timer of this.pending.splice(0)) clearTimeout(timer);
  }
}
