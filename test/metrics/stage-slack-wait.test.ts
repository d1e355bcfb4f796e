import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SlackCallMetrics } from "../../src/metrics/slack-calls.ts";
import { inStage } from "../../src/metrics/stage-scope.ts";
import { MeteredWebClient } from "../../src/slack/metered-web-client.ts";
import { parseExposition, sampleValue } from "../support/prometheus-text.ts";

/**
 * The sensor behind the bench's "seconds any stage waited on Slack": a Slack call made inside a swap's
 * stage is timed and counted by stage; one made by the reporter (outside any stage) is not. A server
 * that answers `chat.postMessage` after 300 ms stands in for a slow Slack (the Web API's JSON envelope,
 * `{ ok: true, … }`, as https://api.slack.com/web#responses documents it).
 */
let server: Server;
let url: string;

beforeAll(async () => {
  server = createServer((_req, res) => {
    setTimeout(() => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ ok: true, channel: "C1", ts: "1.000001" }));
    }, 300);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/`;
});

afterAll(() => {
  server?.close();
});

describe("Slack waits inside stages", () => {
  it("counts a call a stage waited on, by stage, and none of the reporter's", async () => {
    const registry = new Registry();
    const client = new MeteredWebClient(new SlackCallMetrics(registry), "xoxb-test", {
      slackApiUrl: url,
      retryConfig: { retries: 0 },
    });
    const post = () => client.chat.postMessage({ channel: "C1", text: "x" });
    await post(); // the reporter's call: no stage
    await inStage("switch", async () => {
      await new Promise((resolve) => setTimeout(resolve, 10)); // across awaits too
      await post();
    });
    const families = parseExposition(await registry.metrics());
    const waited = (stage: string) =>
      sampleValue(families, "modelswap_slack_wait_in_stages_seconds_total", { stage }) ?? 0;
    expect(waited("switch")).toBeGreaterThanOrEqual(0.29);
    expect(waited("health")).toBe(0);
    expect(
      sampleValue(families, "modelswap_slack_api_calls_total", { method: "chat.postMessage", result: "ok" }),
    ).toBe(2);
  });
});
