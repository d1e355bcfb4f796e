import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Bench, CHANNEL, QUICK_BENCH, startBench, USERS } from "../../testbench/bench.ts";
import { until } from "../../testbench/until.ts";

/**
 * A bot in Socket Mode whose link to Slack goes down and stays down (issue 30, "health that tells the
 * truth"): Slack cuts every connection and refuses to open a new one (apps.connections.open answers 503)
 * for longer than Slack's own refresh. The bot is deaf meanwhile: /healthz says so (503, and why) within
 * a minute, the log says once what failed and the fix, and once Slack answers again the bot opens its link
 * by itself (the SDK alone gives up after an HTTP error), /healthz is 200 again and a command is answered.
 * It answered 200 throughout, and the SDK's log said only "WebSocket error occurred".
 */
let bench: Bench;

beforeAll(async () => {
  bench = await startBench({
    ...QUICK_BENCH,
    socketMode: true,
    hosts: [{ name: "gpu-1", serving: false, engine: "none" }],
  });
  // apps.connections.open is tier 1: this file opens the link several times within a minute
}, 120_000);

afterAll(async () => {
  await bench?.stop();
});

describe("the Socket Mode link down past its bound", () => {
  it("turns /healthz 503 saying the bot is deaf, logs why with the fix, and comes back by itself", async () => {
    const bot = await bench.spawnBot({ role: "bot" });
    const health = async () => {
      const answer = await fetch(`http://127.0.0.1:${bot.port}/healthz`);
      return {
        status: answer.status,
        body: (await answer.json()) as { problems?: string[]; slack?: string },
      };
    };
    expect((await health()).status).toBe(200);
    const cut = Date.now();
    bench.slack.failFor("apps.connections.open", "service_unavailable", { ms: 300_000, status: 503 });
    bench.slack.dropSockets();
    const deaf = await until(
      async () => {
        const h = await health();
        return h.status === 503 ? h : undefined;
      },
      { what: "/healthz to say the bot is deaf", timeoutMs: 90_000, intervalMs: 1000 },
    );
    expect(Date.now() - cut).toBeLessThan(60_000 + 5_000);
    expect(deaf.body.slack).toBe("down");
    expect(deaf.body.problems?.join("\n")).toMatch(
      /Slack's Socket Mode connection has been down for [\d.]+ (?:s|min|h|d)(?: \d+ (?:s|min|h))? .*: commands, reactions and clicks do not reach this bot\. check that this machine reaches Slack/,
    );
    const log = await readFile(bot.logPath, "utf8");
    expect(log).toMatch(/"code":"SLACK_SOCKET_DOWN".*the Socket Mode connection to Slack is down/);
    expect(log).toMatch(/apps\.connections\.open: (service_unavailable|.*503)/);

    bench.slack.endOutage();
    await until(async () => (await health()).status === 200, {
      what: "the bot to open its link again",
      timeoutMs: 120_000,
      intervalMs: 1000,
    });
    expect(await readFile(bot.logPath, "utf8")).toMatch(
      /"code":"SLACK_SOCKET_UP".*the Socket Mode connection to Slack is open again after [\d.]+ (?:s|min|h|d)(?: \d+ (?:s|min|h))?/,
    );
    const ack = await bench.slack.command(USERS.alice, "help", { channel: CHANNEL });
    expect(ack.status).toBe(200);
    expect(ack.ackResponse?.text).toMatch(/\/llm swap/);
    await bot.kill("SIGTERM");
  }, 240_000);
});
