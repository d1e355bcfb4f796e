import { beforeAll, describe, expect, it } from "vitest";
import type { Bench, ChildBot } from "../../testbench/bench.ts";
import { logLines, waitForLog } from "../../testbench/swap-driver.ts";
import { duplicateKeys } from "../support/duplicate-keys.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * A real `modelswap start` with nothing to do (issue #13, logs): Redis away for 20 s is told once when it
 * goes and once when it is back, not once per reconnect attempt of every connection and worker; every
 * log line is one JSON object with each key once; SIGTERM with no step running exits at once, even with
 * Redis away, not after the grace period (a running step still gets it: graceful-shutdown.test.ts).
 */
const OUTAGE_MS = 20_000;
const GRACE_SECONDS = 20;
let bench: Bench;
let bot: ChildBot;

useSwapBench(
  {
    swaps: { shutdownGraceSeconds: GRACE_SECONDS },
    hosts: [{ name: "gpu-1", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } }],
  },
  (b) => {
    bench = b;
  },
);

beforeAll(async () => {
  bot = await bench.spawnBot({ role: "start" });
  await waitForLog(bot.logPath, /health monitor schedulers reconciled/, { what: "the worker to be up" });
  await waitForLog(bot.logPath, /modelswap started/, { what: "the bot to be up" });
}, 90_000);

const level = (line: string): number => (JSON.parse(line) as { level: number }).level;

describe("a process with nothing to do", () => {
  it("Redis away for 20 s: one warning with the error when it goes, one line when it is back", async () => {
    const before = (await logLines(bot.logPath)).length;
    await bench.redis.stop();
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
    const during = (await logLines(bot.logPath)).slice(before);
    await bench.redis.start();
    // the bench's own start-up warning (slackRateScale) can land late on a loaded machine: not the outage's
    const warnings = during.filter((line) => level(line) >= 40 && !line.includes('"slackRateScale"'));
    expect(
      warnings.length,
      `warnings in ${OUTAGE_MS / 1000} s of outage:\n${warnings.join("\n")}`,
    ).toBeLessThanOrEqual(5);
    expect(warnings[0]).toMatch(/"code":"REDIS_UNREACHABLE"/);
    // the error as Node saw Redis go: refused at a (re)connect, or reset under a pending read
    expect(warnings[0]).toMatch(/ECONNREFUSED|read ECONNRESET/);
    const [back] = await waitForLog(bot.logPath, /"code":"REDIS_REACHABLE"/, { what: "Redis to be back" });
    expect(level(back ?? "")).toBe(30);
    expect(back).toMatch(/"downSeconds":(19|2\d),"errors":\d+/);
    // once back, nothing more about it: a late error of the outage is not a second outage
    await new Promise((resolve) => setTimeout(resolve, 5000));
    const after = (await logLines(bot.logPath)).slice(before + during.length);
    expect(after.filter((line) => level(line) >= 40)).toEqual([]);
  }, 90_000);

  it("every log line is one JSON object and names each key once", async () => {
    const lines = await logLines(bot.logPath);
    // the parts of the bot that log with a name of their own, each seen (the monitor's was "worker" too)
    for (const name of ["monitor", "redis", "bolt"]) expect(lines.join("\n")).toContain(`"name":"${name}"`);
    const twice = lines
      .map((line) => ({ line, keys: duplicateKeys(line) }))
      .filter(({ keys }) => keys.length > 0);
    expect(twice.map(({ line, keys }) => `${keys.join(",")} in ${line}`)).toEqual([]);
  });

  it(`SIGTERM with no step running, while Redis is away: exits well within the grace period (${GRACE_SECONDS} s)`, async () => {
    await bench.redis.stop();
    await waitForLog(bot.logPath, /"code":"REDIS_UNREACHABLE"/, {
      count: 2,
      what: "the bot to find Redis gone",
      // its reconnects back off; a loaded machine took over 30 s for two of them (2026-12-07)
      timeoutMs: 90_000,
    });
    const signalled = Date.now();
    await bot.kill("SIGTERM");
    const exitedAfter = Date.now() - signalled;
    await bench.redis.start();
    const log = (await logLines(bot.logPath)).join("\n");
    expect(log).toMatch(/modelswap stopped/);
    expect(log).not.toMatch(/grace period over/);
    expect(exitedAfter).toBeLessThan(5000);
  }, 150_000);
});
