import { beforeAll, describe, expect, it } from "vitest";
import type { Bench, ChildBot } from "../../testbench/bench.ts";
import { logLines, waitForLog } from "../../testbench/swap-driver.ts";
import { duplicateKeys } from "../support/duplicate-keys.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * A real `modelswap start` with nothing to do (issue #13, logs): every log line is one JSON object with
 * each key once.
 */
let bench: Bench;
let bot: ChildBot;

useSwapBench(
  {
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

describe("a process with nothing to do", () => {
  it("every log line is one JSON object and names each key once", async () => {
    const lines = await logLines(bot.logPath);
    // the parts of the bot that log with a name of their own, each seen (the monitor's was "worker" too)
    for (const name of ["monitor", "redis", "bolt"]) expect(lines.join("\n")).toContain(`"name":"${name}"`);
    const twice = lines
      .map((line) => ({ line, keys: duplicateKeys(line) }))
      .filter(({ keys }) => keys.length > 0);
    expect(twice.map(({ line, keys }) => `${keys.join(",")} in ${line}`)).toEqual([]);
  });
});
