import { describe, expect, it } from "vitest";
import { Pacer } from "../../src/slack/pacer.ts";

/** The Slack pacer: its rate, and urgent calls ahead of the others (issue #16: many swaps, one channel). */
describe("Pacer", () => {
  it("lets a burst through at once, then one call per 1/rate, in order", async () => {
    const pacer = new Pacer(20, 2);
    const order: number[] = [];
    const started = Date.now();
    await Promise.all([0, 1, 2, 3].map((i) => pacer.take().then(() => order.push(i))));
    expect(order).toEqual([0, 1, 2, 3]);
    // two from the burst, two more at 20/s: at least ~100 ms
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
  });

  it("serves an urgent call before the ones that waited longer but are not, and urgent ones in order", async () => {
    const pacer = new Pacer(50, 1);
    const order: string[] = [];
    const waits = ["a", "b", "c"].map((name) => pacer.take().then(() => order.push(name)));
    expect(pacer.backlog).toBe(2); // a went at once: the burst
    waits.push(pacer.take(true).then(() => order.push("plan")));
    waits.push(pacer.take(true).then(() => order.push("outcome")));
    waits.push(pacer.take().then(() => order.push("d")));
    await Promise.all(waits);
    expect(order).toEqual(["a", "plan", "outcome", "b", "c", "d"]);
    expect(pacer.backlog).toBe(0);
  });
});
