import type { WebClient } from "@slack/web-api";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createLogger } from "../../src/log.ts";
import { SlackPoster } from "../../src/slack/slack-poster.ts";

/**
 * bench.slackRateScale: the poster paces a channel's posts at N times Slack's one a second (burst 2), for
 * a simulated workspace that allows N times Slack's limits; 1 (production) is Slack's own pace.
 */
afterEach(() => {
  vi.useRealTimers();
});

/** How many of six posts to one channel Slack has received 600 ms after they were all asked for. */
async function postedWithin600ms(scale: number): Promise<number> {
  vi.useFakeTimers();
  let received = 0;
  const client = {
    chat: {
      postMessage: async () => {
        received += 1;
        return { ok: true, ts: `1.${received}`, message: {} };
      },
    },
  } as unknown as WebClient;
  const poster = new SlackPoster(client, [], createLogger({ level: "silent" }), scale);
  const posts = Array.from({ length: 6 }, (_, i) => poster.post("C1", { text: `line ${i}`, blocks: [] }));
  await vi.advanceTimersByTimeAsync(600);
  const seen = received;
  await vi.runAllTimersAsync();
  await Promise.all(posts);
  return seen;
}

describe("the poster's pace under bench.slackRateScale", () => {
  it("posts at Slack's pace by default: the burst of two, then one a second", async () => {
    expect(await postedWithin600ms(1)).toBe(2);
  });

  it("posts N times as fast in a workspace that allows N times the limits", async () => {
    expect(await postedWithin600ms(10)).toBe(6);
  });
});
