import { setTimeout as sleep } from "node:timers/promises";

/**
 * A shared link: all file bodies together are sent at most at `bytesPerSecond` (null = unlimited).
 * Each chunk reserves its slot on a virtual clock, so concurrent downloads share the rate fairly.
 */
export class ByteRateLimiter {
  private rate: number | null = null;
  private cursorMs = 0;

  setRate(bytesPerSecond: number | null): void {
    if (bytesPerSecond !== null && !(bytesPerSecond > 0)) {
      throw new Error(`bytesPerSecond must be a positive number or null, got ${bytesPerSecond}`);
    }
    this.rate = bytesPerSecond;
    this.cursorMs = 0;
  }

  get bytesPerSecond(): number | null {
    return this.rate;
  }

  /** A chunk size that keeps the pacing smooth: about 50 ms of data, between 1 KiB and 64 KiB. */
  chunkSize(): number {
    if (this.rate === null) return 64 * 1024;
    return Math.max(1024, Math.min(64 * 1024, Math.floor(this.rate / 20)));
  }

  /** Resolves when `bytes` more may be sent. */
  async take(bytes: number): Promise<void> {
    const rate = this.rate;
    if (rate === null) return;
    const now = performance.now();
    const start = Math.max(now, this.cursorMs);
    this.cursorMs = start + (bytes / rate) * 1000;
    const waitMs = this.cursorMs - now;
    if (waitMs >= 1) await sleep(waitMs);
  }
}
