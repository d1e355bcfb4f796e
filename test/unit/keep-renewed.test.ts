import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { keepRenewed } from "../../src/keep-renewed.ts";

describe("keepRenewed", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("renews every period until stopped, then never again", async () => {
    const renew = vi.fn(async () => true);
    const stop = keepRenewed(renew, 1000);
    await vi.advanceTimersByTimeAsync(999);
    expect(renew).toHaveBeenCalledTimes(0);
    await vi.advanceTimersByTimeAsync(3001);
    expect(renew).toHaveBeenCalledTimes(4);
    stop();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(renew).toHaveBeenCalledTimes(4);
  });

  it("once the holder is told it is gone: says so once and stops renewing", async () => {
    let held = true;
    const renew = vi.fn(async () => held);
    const lost = vi.fn();
    keepRenewed(renew, 1000, lost);
    await vi.advanceTimersByTimeAsync(2000);
    held = false;
    await vi.advanceTimersByTimeAsync(5000);
    expect(lost).toHaveBeenCalledTimes(1);
    expect(renew).toHaveBeenCalledTimes(3);
  });

  it("a renewal that throws (Redis away) is tried again at the next turn", async () => {
    let calls = 0;
    const renew = vi.fn(async () => {
      calls += 1;
      if (calls <= 2) throw new Error("ECONNREFUSED");
      return true;
    });
    const lost = vi.fn();
    keepRenewed(renew, 1000, lost);
    await vi.advanceTimersByTimeAsync(4000);
    expect(renew).toHaveBeenCalledTimes(4);
    expect(lost).not.toHaveBeenCalled();
  });

  it("never starts a renewal while the previous one is unanswered", async () => {
    let inFlight = 0;
    let most = 0;
    const renew = vi.fn(async () => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 2500)); // a slow Redis
      inFlight -= 1;
      return true;
    });
    const stop = keepRenewed(renew, 1000);
    await vi.advanceTimersByTimeAsync(10_000);
    stop();
    expect(most).toBe(1);
    expect(renew).toHaveBeenCalledTimes(3); // at 1 s, 4.5 s and 8 s
  });

  it("a renewal answered after the stop does not start another or call lost", async () => {
    let answer: (held: boolean) => void = () => undefined;
    const renew = vi.fn(() => new Promise<boolean>((resolve) => (answer = resolve)));
    const lost = vi.fn();
    const stop = keepRenewed(renew, 1000, lost);
    await vi.advanceTimersByTimeAsync(1000);
    stop();
    answer(false);
    await vi.advanceTimersByTimeAsync(5000);
    expect(renew).toHaveBeenCalledTimes(1);
    expect(lost).not.toHaveBeenCalled();
  });
});
