import { readFile, writeFile } from "node:fs/promises";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { newSwapId } from "../../src/grammar/swap-id.ts";
import { parseSwapRequest } from "../../src/grammar/swap-request.ts";
import { MonitorQueue } from "../../src/queue/monitor-queue.ts";
import { AuditLog } from "../../src/store/audit-log.ts";
import { type HostHealthState, IncidentTracker } from "../../src/store/incidents.ts";
import { Store } from "../../src/store/store.ts";
import { newStages, type SwapRecord } from "../../src/swap/swap-record.ts";
import { type Bench, CHANNEL, QUICK_BENCH, startBench, USERS } from "../../testbench/bench.ts";
import type { SlackMessage } from "../../testbench/slack/index.ts";
import { until } from "../../testbench/until.ts";

/**
 * The health monitor end to end: the real bot's BullMQ job schedulers check simulated hosts over real
 * SSH every second; the hosts' servers really crash, hang (SIGSTOP) and come back; alerts and recoveries
 * land in the Slack emulator's channel.
 */
const FAST = { loadSeconds: 0.3, warmupMs: 50 };
let bench: Bench;
let redis: Redis;
let tracker: IncidentTracker;
const stopped = new Set<number>();

beforeAll(async () => {
  bench = await startBench({
    ...QUICK_BENCH,
    connectTimeoutSeconds: 2,
    health: { intervalSeconds: 1, failureThreshold: 2, recoveryThreshold: 3, checkTimeoutSeconds: 0.8 },
    hosts: [
      {
        name: "crashy",
        gpus: "8x-rtx-pro-6000-blackwell",
        serving: { preset: "qwen3-fp8-dense" },
        faults: { sglang: FAST },
        waitHealthy: true,
      },
      { name: "flappy", gpus: "h200-1gpu", serving: { preset: "llama-bf16-small" } },
      { name: "busy", gpus: "8x-h200", serving: { preset: "llama-bf16-small" } },
    ],
  });
  redis = new Redis(bench.redis.url);
  // read-only use: the thresholds only matter to record()
  tracker = new IncidentTracker(redis, { failureThreshold: 2, recoveryThreshold: 3, claimTimeoutMs: 60_000 });
  await bench.startBot();
}, 90_000);

afterAll(async () => {
  for (const pid of stopped) signalGroup(pid, "SIGCONT");
  redis?.disconnect();
  await bench?.stop();
});

const alerts = (host: string) =>
  bench.slack.messages(CHANNEL).filter((m) => m.text.startsWith(`🚨 ${host} is not serving`));
const recoveries = (host: string) =>
  bench.slack.messages(CHANNEL).filter((m) => m.text.startsWith(`✅ ${host} is serving again`));
const body = (m: SlackMessage) => `${m.text}\n${JSON.stringify(m.blocks)}`;

const state = (host: string): Promise<HostHealthState> => tracker.state(host);

/** The seconds of "after an outage of 4.2 s" (or "48 s", "1 min 4 s", "2 h"): src/format-duration.ts's form. */
function outageSeconds(text: string): number {
  const stated = /after an outage of ((?:[\d.]+ (?:d|h|min|s) ?)+)/.exec(text)?.[1];
  if (stated === undefined) throw new Error(`no outage in: ${text}`);
  const unit: Record<string, number> = { d: 86_400, h: 3600, min: 60, s: 1 };
  return [...stated.matchAll(/([\d.]+) (d|h|min|s)/g)].reduce(
    (sum, [, n, u]) => sum + Number(n) * unit[u!]!,
    0,
  );
}

/** Waits until this many more checks of the host were recorded (any result). */
async function checksPass(host: string, count: number): Promise<void> {
  const seen = new Set<number>();
  await until(
    async () => {
      const now = await state(host);
      if (now.lastCheck !== undefined) seen.add(now.lastCheck.getTime());
      return seen.size > count;
    },
    { what: `${count} more checks of ${host}` },
  );
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    process.kill(pid, signal);
  }
}

async function mainPid(host: string): Promise<number> {
  const { sim, unit } = bench.host(host);
  return await until(async () => (await sim.unitState(unit)).mainPid || undefined, {
    what: `${unit}'s MainPID`,
  });
}

describe("health monitor", () => {
  it("posts one alert with the journal and nvidia-smi when a server crashes, and one recovery with the outage", async () => {
    const { sim, unit } = bench.host("crashy");
    // the server dies and every automatic restart crashes too, until systemd gives up
    await sim.setFault("sglang", { ...FAST, mode: "crash-on-start" });
    const crashed = Date.now();
    process.kill(await mainPid("crashy"), "SIGKILL");

    const alert = await until(() => alerts("crashy")[0], { what: "the alert for crashy" });
    const text = body(alert);
    expect(text).toContain("Qwen/Qwen3-8B-FP8");
    expect(text).toContain(unit);
    expect(text).toMatch(/Since\*\\n\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(\d+ failed checks in a row\)/);
    expect(text).toMatch(
      /Failing check:\* `sglang-crashy.service` is (failed|activating|inactive)|connection refused/,
    );
    // the journal's tail from the crash's traceback on
    expect(text).toContain("Traceback (most recent call last)");
    expect(text).toContain("undefined symbol");
    // the nvidia-smi snapshot
    expect(text).toContain("8× NVIDIA RTX PRO 6000 Blackwell Server Edition (sm 12.0)");
    expect(text).toMatch(/GPU +Name +Memory/);
    // how to act
    expect(text).toContain("/llm status crashy");
    expect(text).toContain("/llm rollback crashy");

    // the incident goes on: more failed checks, no second alert
    const failuresAtAlert = (await state("crashy")).failures;
    await until(async () => (await state("crashy")).failures >= failuresAtAlert + 2, {
      what: "two more failed checks",
    });
    await until(async () => (await sim.unitState(unit)).activeState === "failed", {
      what: "systemd to give up",
    });
    expect(alerts("crashy")).toHaveLength(1);

    // fixed: the operator restarts it
    await sim.setFault("sglang", FAST);
    expect((await sim.systemctl("reset-failed", unit)).code).toBe(0);
    expect((await sim.systemctl("start", unit)).code).toBe(0);
    const recovery = await until(() => recoveries("crashy")[0], { what: "the recovery of crashy" });
    expect(recovery.thread_ts).toBe(alert.ts);
    expect(recovery.reply_broadcast).toBe(true);
    expect(bench.slack.thread(CHANNEL, alert.ts)).toHaveLength(1);
    expect(recovery.text).toMatch(/after an outage of [\d.]+ (?:s|min|h|d)(?: \d+ (?:s|min|h))?/);
    expect(body(recovery)).toContain("Qwen/Qwen3-8B-FP8");
    // the outage it states is what this test lived through: at least the two failed checks, at most the
    // time from the crash to the recovery's arrival (however slow a loaded machine made the restart)
    const seconds = outageSeconds(recovery.text);
    expect(seconds).toBeGreaterThanOrEqual(2);
    expect(seconds).toBeLessThanOrEqual(Math.ceil((Date.now() - crashed) / 1000));

    // healthy from now on: nothing more is said
    await checksPass("crashy", 2);
    expect(alerts("crashy")).toHaveLength(1);
    expect(recoveries("crashy")).toHaveLength(1);
    expect((await state("crashy")).incident).toBeUndefined();

    // both are in the audit stream, by the bot itself
    const audit = await new AuditLog(redis).read({ host: "crashy", limit: 10 });
    expect(audit.map((e) => e.kind)).toEqual(["recovery", "alert"]);
    expect(audit.every((e) => e.who === "modelswap")).toBe(true);
    expect(audit[0]?.detail).toMatch(/outage of [\d.]+ (?:s|min|h|d)(?: \d+ (?:s|min|h))?/);
  }, 45_000);

  it("keeps one incident open while a hung server flaps, and recovers once when it is stable", async () => {
    const pid = await mainPid("flappy");
    stopped.add(pid);
    signalGroup(pid, "SIGSTOP"); // the server hangs: /health_generate times out, the unit stays active
    const alert = await until(() => alerts("flappy")[0], { what: "the alert for flappy" });
    expect(body(alert)).toContain("/health_generate timed out after 0.8 s");
    expect(body(alert)).toContain("1× NVIDIA H200 (sm 9.0)");

    for (let flap = 0; flap < 2; flap++) {
      signalGroup(pid, "SIGCONT");
      await until(async () => (await state("flappy")).passes >= 1, { what: "a passed check" });
      signalGroup(pid, "SIGSTOP");
      await until(async () => (await state("flappy")).failures >= 1, { what: "a failed check" });
    }
    expect((await state("flappy")).incident?.alertTs).toBe(alert.ts);
    expect(alerts("flappy")).toHaveLength(1);
    expect(recoveries("flappy")).toHaveLength(0);

    signalGroup(pid, "SIGCONT");
    stopped.delete(pid);
    const recovery = await until(() => recoveries("flappy")[0], { what: "the recovery of flappy" });
    expect(recovery.thread_ts).toBe(alert.ts);
    await checksPass("flappy", 1);
    expect(alerts("flappy")).toHaveLength(1);
    expect(recoveries("flappy")).toHaveLength(1);
  }, 45_000);

  it("stays quiet while a swap is switching the host, and resumes after it", async () => {
    const { sim, unit } = bench.host("busy");
    const store = new Store(redis);
    const parsed = parseSwapRequest(["sim-org/open-llama-1B", "--host", "busy"]);
    if (!parsed.ok) throw new Error(parsed.reason);
    const now = new Date().toISOString();
    const swap: SwapRecord = {
      id: newSwapId(),
      host: "busy",
      requester: USERS.alice,
      channel: CHANNEL,
      createdAt: now,
      request: parsed.request,
      step: "health",
      stages: newStages(),
      tasks: {},
      previous: { unit, engine: "sglang" },
      switch: { startedAt: now, oldStoppedAt: now },
    };
    await store.swaps.save(swap);
    expect(await store.locks.lockHost("busy", swap.id)).toEqual({ ok: true });
    // the swap stopped the old service: the host serves nothing while the new one loads
    expect((await sim.systemctl("stop", unit)).code).toBe(0);

    await checksPass("busy", 4);
    const during = await state("busy");
    expect(during.lastResult).toBe("suppressed");
    expect(during.lastDetail).toContain(swap.id);
    expect(during.failures).toBe(0);
    expect(alerts("busy")).toHaveLength(0);

    // the swap ends (failed, say, and its own message said so): the monitor looks again
    await store.swaps.save({
      ...swap,
      outcome: "failed",
      step: "done",
      finishedAt: new Date().toISOString(),
    });
    await store.locks.unlockHost("busy", swap.id);
    const alert = await until(() => alerts("busy")[0], { what: "the alert for busy after the swap" });
    expect(body(alert)).toContain("`sglang-busy.service` is inactive");
    expect(body(alert)).toContain("connection refused");
    await checksPass("busy", 1);
    expect(alerts("busy")).toHaveLength(1);
  }, 30_000);

  it("restarting with a host removed from the config leaves no scheduler for it; adding it back adds one", async () => {
    const queue = new MonitorQueue(redis);
    try {
      const hostsOf = async () => (await queue.schedulers()).map((s) => s.host).sort();
      expect(await hostsOf()).toEqual(["busy", "crashy", "flappy"]);
      expect((await queue.schedulers()).every((s) => s.everyMs === 1000)).toBe(true);

      const original = await readFile(bench.configPath, "utf8");
      const config = parse(original) as { hosts: { name: string }[]; health: Record<string, number> };
      await bench.stopBots();
      await writeFile(
        bench.configPath,
        stringify({
          ...config,
          health: { ...config.health, intervalSeconds: 2 },
          hosts: config.hosts.filter((h) => h.name !== "busy"),
        }),
      );
      await bench.startBot({ bot: false, worker: true });
      expect(await hostsOf()).toEqual(["crashy", "flappy"]);
      expect((await queue.schedulers()).every((s) => s.everyMs === 2000)).toBe(true);
      // nothing left that would check it, and its incident is forgotten
      const pending = await queue.queue.getJobs(["delayed", "waiting", "prioritized", "active"]);
      expect(pending.filter((job) => job.data.host === "busy")).toEqual([]);
      expect(pending.length).toBeGreaterThan(0);
      expect((await state("busy")).incident).toBeUndefined();
      // no scheduler or job of the monitor queue, no health state of the store
      expect(
        (await redis.keys("{modelswap}:*busy*")).filter(
          (k) => k.includes("monitor") || k.includes(":health"),
        ),
      ).toEqual([]);

      await bench.stopBots();
      await writeFile(bench.configPath, original);
      await bench.startBot({ bot: false, worker: true });
      expect(await hostsOf()).toEqual(["busy", "crashy", "flappy"]);
      await checksPass("busy", 1);
    } finally {
      await queue.close();
    }
  }, 30_000);

  it("says a host it cannot reach is unreachable, serving state unknown, once; never 'not serving' with a rollback", async () => {
    await bench.sshd.cut();
    try {
      const unreachable = await until(
        () =>
          bench.slack
            .messages(CHANNEL)
            .find((m) => m.text.startsWith("⚠️ flappy is unreachable from modelswap: serving state unknown")),
        { what: "the unreachable alert of flappy", timeoutMs: 30_000 },
      );
      const text = body(unreachable);
      expect(text).not.toContain("is not serving");
      expect(text).not.toContain("/llm rollback");
      // the SSH error is said once (in the message's text and once in its blocks), not per journal and nvidia-smi read
      expect(JSON.stringify(unreachable.blocks).split("is unreachable: ").length - 1).toBe(1);
      expect(text).toMatch(/\(HOST_UNREACHABLE\)/);
      expect(alerts("flappy").filter((m) => m.ts === unreachable.ts)).toEqual([]);
    } finally {
      await bench.sshd.start();
    }
  }, 60_000);
});
