import { CHANNEL, startBench } from "../testbench/bench.ts";
import { tsToMillis } from "../testbench/slack/ts-clock.ts";
import { until } from "../testbench/until.ts";
import { spawnBot, stopBot } from "./bot-process.ts";
import type { Progress, SectionResult } from "./section.ts";
import { percentile, round, sleep } from "./stats.ts";

export interface AlertOptions {
  /** Kills, each followed by its alert and the recovery. */
  repeats: number;
  /** health.intervalSeconds */
  intervalSeconds: number;
  /** health.failureThreshold */
  threshold: number;
}

export interface AlertFigures {
  interval_s: number;
  threshold: number;
  p50_extra_ms: number;
  p99_extra_ms: number;
}

const HOST = "watched";
/** A quick engine, so the restart between kills is short. */
const FAST = { loadSeconds: 0.3, warmupMs: 50 };

/**
 * Alert latency: the serving process of a monitored host is SIGKILLed (and every restart systemd tries
 * crashes, as when a broken engine takes a server down), and the alert's post time in Slack is compared
 * with the kill. No monitor can alert before `threshold` checks `interval` apart have failed: what the bot
 * adds beyond threshold × interval is the figure. After each alert the host is restarted and the
 * recovery awaited, so every kill starts from a healthy host.
 */
export async function benchAlert(
  options: AlertOptions,
  progress: Progress,
): Promise<SectionResult<AlertFigures>> {
  const bench = await startBench({
    logTo: "silent",
    health: {
      intervalSeconds: options.intervalSeconds,
      failureThreshold: options.threshold,
      checkTimeoutSeconds: 1,
    },
    hosts: [
      {
        name: HOST,
        gpus: "h200-1gpu",
        serving: { preset: "llama-bf16-small" },
        faults: { sglang: FAST },
        waitHealthy: true,
      },
    ],
  });
  try {
    const { sim, unit } = bench.host(HOST);
    const bot = await spawnBot(bench);
    const said = (prefix: string) =>
      bench.slack.messages(CHANNEL).filter((m) => m.text.startsWith(`${prefix} ${HOST} is`));
    const floorMs = options.threshold * options.intervalSeconds * 1000;
    // a passed check first: the monitor has connected and counts from a healthy host
    await sleep(2 * options.intervalSeconds * 1000);
    const extras: number[] = [];
    for (let i = 0; i < options.repeats; i++) {
      const alertsBefore = said("🚨").length;
      const recoveriesBefore = said("✅").length;
      await sim.setFault("sglang", { ...FAST, mode: "crash-on-start" });
      const pid = await until(async () => (await sim.unitState(unit)).mainPid || undefined, {
        what: "the server's pid",
        timeoutMs: 10_000,
      });
      // a random moment within the check interval, as a real crash would fall
      await sleep(Math.random() * options.intervalSeconds * 1000);
      process.kill(pid, "SIGKILL");
      const killedAt = Date.now();
      const alert = await until(() => said("🚨")[alertsBefore], {
        what: `alert ${i + 1}`,
        timeoutMs: floorMs + 30_000,
      });
      extras.push(tsToMillis(alert.ts) - killedAt - floorMs);
      progress(
        `kill ${i + 1}/${options.repeats}: alert ${round((tsToMillis(alert.ts) - killedAt) / 1000, 2)} s after the kill`,
      );
      // the operator fixes it; the next kill waits for the recovery
      await sim.setFault("sglang", FAST);
      await sim.systemctl("reset-failed", unit);
      await sim.systemctl("start", unit);
      await until(() => said("✅")[recoveriesBefore], { what: `recovery ${i + 1}`, timeoutMs: 60_000 });
    }
    await stopBot(bot);
    return {
      figures: {
        interval_s: options.intervalSeconds,
        threshold: options.threshold,
        p50_extra_ms: round(percentile(extras, 50), 0),
        p99_extra_ms: round(percentile(extras, 99), 0),
      },
      details: [
        `alert: ${extras.length} kills; beyond ${options.threshold} × ${options.intervalSeconds} s: min ${round(Math.min(...extras), 0)} ms, max ${round(Math.max(...extras), 0)} ms`,
      ],
    };
  } finally {
    await bench.stop();
  }
}
