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

  it("with one in flight, gives the next turn only once the previous call was answered, urgent ones first", async () => {
    const pacer = new Pacer(1000, 5, 1); // the rate would let all of them go at once: only the answers pace
    const events: string[] = [];
    let answer: (() => void) | undefined;
    const slow = pacer.run(
      () =>
        new Promise<void>((resolve) => {
          events.push("slow sent");
          answer = () => {
            events.push("slow answered");
            resolve();
          };
        }),
    );
    const next = pacer.run(async () => {
      events.push("next sent");
    });
    const urgent = pacer.run(async () => {
      events.push("urgent sent");
    }, true);
    await new Promise((resolve) => setTimeout(resolve, 50));
    // the burst had tokens for all three: still only the first left, and two wait their turn
    expect(events).toEqual(["slow sent"]);
    expect(pacer.backlog).toBe(2);
    answer?.();
    await Promise.all([slow, next, urgent]);
    expect(events).toEqual(["slow sent", "slow answered", "urgent sent", "next sent"]);
    expect(pacer.backlog).toBe(0);
  });

  it("hurries the calls of one tag: they go with the urgent ones, in their order, the others stay behind", async () => {
    const pacer = new Pacer(50, 1);
    const order: string[] = [];
    const waits = [pacer.take().then(() => order.push("first"))];
    waits.push(pacer.take(false, "sw-a").then(() => order.push("a1")));
    waits.push(pacer.take(false, "sw-b").then(() => order.push("b1")));
    waits.push(pacer.take(true, "sw-c").then(() => order.push("c-outcome")));
    waits.push(pacer.take(false, "sw-a").then(() => order.push("a2")));
    pacer.hurry("sw-a");
    pacer.hurry("sw-none");
    await Promise.all(waits);
    expect(order).toEqual(["first", "c-outcome", "a1", "a2", "b1"]);
  });
});
