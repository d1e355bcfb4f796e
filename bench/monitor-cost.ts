import { availableParallelism } from "node:os";
import { Redis } from "ioredis";
import { type CheckLateness, readLateness } from "../src/store/incidents.ts";
import { keys } from "../src/store/keys.ts";
import { type BenchHostSpec, CHANNEL, startBench, USERS } from "../testbench/bench.ts";
import { spawnBot, stopBot } from "./bot-process.ts";
import { shimCalls } from "./host-timings.ts";
import { machineBusySeconds, sampleProcess } from "./proc-stats.ts";
import type { Progress, SectionResult } from "./section.ts";
import { measureSshCost } from "./ssh-cost.ts";
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
  /** The latest any check started after its scheduled moment, in the window (the monitor's own histogram). */
  worst_lateness_s: number;
  /** Checks done per interval in the window: the fleet is kept up with when this is the host count. */
  checks_per_interval: number;
  /** One SSH handshake's CPU, both ends (ms), against one command on a kept connection. */
  ssh_handshake_cpu_ms: number;
  ssh_exec_cpu_ms: number;
  /** `/llm status` of the whole fleet, asked once the window is over: from the command to its answer. */
  status_s: number;
}

/** Names per real sandbox: the rest of the fleet are light hosts that share one (own name, key, connection). */
const HOSTS_PER_SANDBOX = 50;

/**
 * Fleet monitoring cost: the real `modelswap start` watches N healthy hosts, each over its own SSH
 * connection to the bench's sshd, checked every interval. After one interval of warm-up (every
 * connection opened, every host checked once), its CPU time (utime + stime from /proc/<pid>/stat) over
 * the window divided by the window is the share of one core it needs, its peak resident memory (VmRSS,
 * sampled every second) what it holds, and the monitor's own lateness histogram in Redis (cleared of
 * its maximum at the window's start) how late the latest check started. The hosts' own work (sshd, the
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
    const fleetHost = (await bench.config()).file.hosts[0];
    if (fleetHost === undefined) throw new Error("bench: no host configured");
    const ssh = await measureSshCost(bench.sshd, fleetHost, Math.min(100, options.hosts * 10));
    const bot = await spawnBot(bench);
    const redis = new Redis(bench.redis.url);
    const warmStart = sampleProcess(bot.pid);
    const warmStartedAt = Date.now();
    await sleep(options.intervalSeconds * 1000 + 2000);
    const warm = sampleProcess(bot.pid);
    const warmSeconds = (Date.now() - warmStartedAt) / 1000;
    await redis.hdel(keys.monitorLateness, "maxMs");
    const latenessBefore = await readLateness(redis);
    const checksBefore = await checks(bench);
    const start = sampleProcess(bot.pid);
    const machineStart = machineBusySeconds();
    const startedAt = Date.now();
    let peakRss = start.rssBytes;
    while (Date.now() - startedAt < options.durationSeconds * 1000) {
      await sleep(1000);
      peakRss = Math.max(peakRss, sampleProcess(bot.pid).rssBytes);
    }
    const end = sampleProcess(bot.pid);
    const seconds = (Date.now() - startedAt) / 1000;
    const machineCores = (machineBusySeconds() - machineStart) / seconds;
    const done = (await checks(bench)) - checksBefore;
    const lateness = await readLateness(redis);
    redis.disconnect();
    const status = await timeFleetStatus(bench, bot.pid, options.hosts);
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
        worst_lateness_s: round(lateness.maxSeconds, 3),
        checks_per_interval: round((done * options.intervalSeconds) / seconds, 0),
        ssh_handshake_cpu_ms: ssh.handshake_cpu_ms,
        ssh_exec_cpu_ms: ssh.exec_cpu_ms,
        status_s: status.seconds,
      },
      details: [
        `monitor: an SSH handshake costs ${ssh.handshake_cpu_ms} CPU ms (both ends) and ${ssh.handshake_ms} ms; a command on a kept connection ${ssh.exec_cpu_ms} CPU ms and ${ssh.exec_ms} ms`,
        `monitor: ${done} checks in ${round(seconds, 0)} s (about ${expected} due), ${round(end.cpuSeconds - start.cpuSeconds, 2)} CPU s; ${alerts} alerts`,
        `monitor: the whole machine (bot, sshd, the simulated hosts, Redis) was busy ${round(machineCores, 2)} of ${availableParallelism()} cores in the window`,
        `monitor: /llm status of the ${options.hosts} hosts answered in ${status.seconds} s (${status.tally}); the bot used ${status.cpuSeconds} CPU s for it`,
        `monitor: warm-up (connecting to ${options.hosts} hosts, first checks) ${round((warm.cpuSeconds - warmStart.cpuSeconds) / warmSeconds, 3)} of a core for ${round(warmSeconds, 0)} s`,
        `monitor: lateness in the window: mean ${round(
          (lateness.sumSeconds - latenessBefore.sumSeconds) /
            Math.max(1, lateness.count - latenessBefore.count),
          3,
        )} s over ${lateness.count - latenessBefore.count} checks, worst ${round(lateness.maxSeconds, 3)} s; later than 1 s: ${laterThan(lateness, 1) - laterThan(latenessBefore, 1)}, than 0.25 s: ${laterThan(lateness, 0.25) - laterThan(latenessBefore, 0.25)}`,
      ],
    };
  } finally {
    await bench.stop();
  }
}

/**
 * `/llm status` without a host, as alice types it, while the monitor goes on: the time until its answer
 * (an ephemeral: `status.visibility` is private) reaches Slack, and the bot's CPU meanwhile. The answer
 * must account for every host (the summary's tally, or the table's rows for 25 hosts or fewer).
 */
async function timeFleetStatus(
  bench: Awaited<ReturnType<typeof startBench>>,
  botPid: number,
  hosts: number,
): Promise<{ seconds: number; cpuSeconds: number; tally: string }> {
  const before = bench.slack.ephemerals(CHANNEL, USERS.alice).length;
  const cpu = sampleProcess(botPid);
  const asked = Date.now();
  const ack = await bench.slack.command(USERS.alice, "status", { channel: CHANNEL });
  if (ack.status !== 200) throw new Error(`bench: /llm status was answered ${ack.status}`);
  const answer = await bench.slack.waitFor(
    () =>
      bench.slack
        .ephemerals(CHANNEL, USERS.alice)
        .slice(before)
        .find((e) => e.from === "bot" && e.source === "api"),
    { timeoutMs: 15 * 60_000, intervalMs: 100, what: `the answer to /llm status of ${hosts} hosts` },
  );
  const seconds = round((Date.now() - asked) / 1000, 1);
  const cpuSeconds = round(sampleProcess(botPid).cpuSeconds - cpu.cpuSeconds, 2);
  const text = JSON.stringify(answer.blocks ?? answer.text);
  const counted = [...text.matchAll(/\*(\d+)\*/g)].reduce((sum, m) => sum + Number(m[1]), 0);
  if (hosts > 25 && counted < hosts)
    throw new Error(
      `bench: /llm status accounted for ${counted} of ${hosts} hosts: ${answer.text.slice(0, 300)}`,
    );
  // past 25 hosts a summary, its counts by state; up to 25 a table of every host
  const tally =
    hosts > 25 ? (/(🟢[^"\\]*)/.exec(text)?.[1] ?? answer.text.slice(0, 80)) : `a table of ${hosts} hosts`;
  return { seconds, cpuSeconds, tally };
}

/** Health checks so far: each runs `systemctl is-active` in its host's sandbox. */
async function checks(bench: Awaited<ReturnType<typeof startBench>>): Promise<number> {
  let total = 0;
  for (const sim of new Set([...bench.hosts.values()].map((h) => h.sim))) {
    total += (await shimCalls(sim, "systemctl")).filter((c) => c.argv[0] === "is-active").length;
  }
  return total;
}

/** Checks of the histogram later than `seconds` (a bucket bound): the buckets above it. */
function laterThan(lateness: CheckLateness, seconds: number): number {
  let n = 0;
  for (const [bound, count] of lateness.counts) if (bound === "+Inf" || Number(bound) > seconds) n += count;
  return n;
}
