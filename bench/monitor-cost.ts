import { type BenchHostSpec, CHANNEL, startBench } from "../testbench/bench.ts";
import { spawnBot, stopBot } from "./bot-process.ts";
import { shimCalls } from "./host-timings.ts";
import { sampleProcess } from "./proc-stats.ts";
import type { Progress, SectionResult } from "./section.ts";
import { round, sleep } from "./stats.ts";

export interface MonitorOptions {
  hosts: number;
  /** health.intervalSeconds */
  intervalSeconds: number;
  /** How long the bot's CPU and memory are watched. */
  durationSeconds: number;
}

export interface MonitorFigures {
  hosts: number;
  interval_s: number;
  cpu_core_fraction: number;
  rss_mb: number;
}

/** Names per real sandbox: the rest of the fleet are light hosts that share one (own name, key, connection). */
const HOSTS_PER_SANDBOX = 50;

/**
 * Fleet monitoring cost: the real `modelswap start` watches N healthy hosts, each over its own SSH
 * connection to the bench's sshd, checked every interval; its CPU time (utime + stime from
 * /proc/<pid>/stat) over the window divided by the window is the share of one core it needs, and its
 * peak resident memory (VmRSS, sampled every second) what it holds. The hosts' own work (sshd, the
 * shims, the simulated engines) runs in other processes and is not counted.
 */
export async function benchMonitor(
  options: MonitorOptions,
  progress: Progress,
): Promise<SectionResult<MonitorFigures>> {
  const sandboxes = Math.ceil(options.hosts / HOSTS_PER_SANDBOX);
  const hosts: BenchHostSpec[] = Array.from({ length: options.hosts }, (_, i) =>
    i < sandboxes
      ? { name: `fleet-${i}`, gpus: "8x-h200" as const, serving: { preset: "llama-bf16-small" as const } }
      : { name: `fleet-${i}`, sandboxOf: `fleet-${i % sandboxes}` },
  );
  const setupStart = Date.now();
  const bench = await startBench({
    logTo: "silent",
    health: { intervalSeconds: options.intervalSeconds },
    hosts,
  });
  try {
    progress(
      `${options.hosts} hosts (${sandboxes} sandboxes) ready in ${round((Date.now() - setupStart) / 1000, 1)} s`,
    );
    const bot = await spawnBot(bench);
    const checksBefore = await checks(bench);
    const start = sampleProcess(bot.pid);
    const startedAt = Date.now();
    let peakRss = start.rssBytes;
    while (Date.now() - startedAt < options.durationSeconds * 1000) {
      await sleep(1000);
      peakRss = Math.max(peakRss, sampleProcess(bot.pid).rssBytes);
    }
    const end = sampleProcess(bot.pid);
    const seconds = (Date.now() - startedAt) / 1000;
    const done = (await checks(bench)) - checksBefore;
    const alerts = bench.slack.messages(CHANNEL).filter((m) => m.text.startsWith("🚨")).length;
    await stopBot(bot);
    const expected = Math.floor((options.hosts * seconds) / options.intervalSeconds);
    if (done === 0) throw new Error(`bench: no health check ran (about ${expected} were due)`);
    return {
      figures: {
        hosts: options.hosts,
        interval_s: options.intervalSeconds,
        cpu_core_fraction: round((end.cpuSeconds - start.cpuSeconds) / seconds, 3),
        rss_mb: round(peakRss / 1024 / 1024, 1),
      },
      details: [
        `monitor: ${done} checks in ${round(seconds, 0)} s (about ${expected} due), ${round(end.cpuSeconds - start.cpuSeconds, 2)} CPU s; ${alerts} alerts`,
      ],
    };
  } finally {
    await bench.stop();
  }
}

/** Health checks so far: each runs `systemctl is-active` in its host's sandbox. */
async function checks(bench: Awaited<ReturnType<typeof startBench>>): Promise<number> {
  let total = 0;
  for (const sim of new Set([...bench.hosts.values()].map((h) => h.sim))) {
    total += (await shimCalls(sim, "systemctl")).filter((c) => c.argv[0] === "is-active").length;
  }
  return total;
}
