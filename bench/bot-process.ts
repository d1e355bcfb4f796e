import { fileSchema } from "../src/config/file-schema.ts";
import type { Bench, ChildBot, SpawnBotOptions } from "../testbench/bench.ts";

/**
 * The config's own `swaps:` defaults (what an operator gets without writing any): the bench measures
 * the bot as shipped, not the test bench's faster polling.
 */
export function shippedSwapSettings(): Record<string, number | string | boolean | string[]> {
  return { ...fileSchema.shape.swaps.parse(undefined) };
}

/**
 * Starts the real `modelswap` CLI as a child process, logging at info as in production (or at
 * MODELSWAP_BENCH_LOG_LEVEL). With
 * `--cpu-prof DIR` given to the bench, node profiles it (the profile is written when it exits cleanly:
 * stop it with `stopBot`).
 */
export async function spawnBot(bench: Bench, options: SpawnBotOptions = {}): Promise<ChildBot> {
  const profileDir = process.env.MODELSWAP_BENCH_CPU_PROF;
  const nodeArgs = profileDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${profileDir}`];
  // MODELSWAP_BENCH_LOG_LEVEL=debug keeps the lines that time each report run ("report run": queuedMs, ms);
  // MODELSWAP_KEEP_BENCH=1 keeps the bench's directory, and the bot's log in it (bot-1.log)
  const logLevel = process.env.MODELSWAP_BENCH_LOG_LEVEL ?? "info";
  return await bench.spawnBot({ logLevel, nodeArgs, ...options });
}

/** Stops a child bot with SIGTERM (it shuts down and writes its profile), SIGKILL after 10 s. */
export async function stopBot(bot: ChildBot): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = await Promise.race([
    bot.kill("SIGTERM").then(() => false),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), 10_000);
    }),
  ]);
  clearTimeout(timer);
  if (late) await bot.kill("SIGKILL");
}
