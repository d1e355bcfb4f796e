import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { Worker } from "bullmq";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkBotHealth } from "../../src/http/health.ts";
import { type Bench, CHANNEL, QUICK_BENCH, startBench } from "../../testbench/bench.ts";
import { freePort } from "../../testbench/free-port.ts";
import { makeModel } from "../../testbench/hub/index.ts";
import { SwapDriver, waitForLog } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";
import { type ParsedFamily, parseExposition, sampleValue } from "../support/prometheus-text.ts";

/**
 * What an operator sees of the bot from outside: /metrics scraped after real swaps (one succeeded, one
 * rolled back by the sanity gate), a health alert and a Slack 429, parsed as Prometheus would; /healthz
 * with Redis up and down; the bull-board dashboard off, refused and open.
 */
const FAST = { loadSeconds: 0.3, warmupMs: 50 };
const PASSWORD = "dashboard-pw-8c1f3a9e";
let bench: Bench;
let base: string;
let swaps: SwapDriver;

beforeAll(async () => {
  bench = await startBench({
    ...QUICK_BENCH,
    swaps: { pollSeconds: 0.3, cardUpdateSeconds: 1, healthTimeoutSeconds: 30 },
    health: { intervalSeconds: 1, failureThreshold: 3, recoveryThreshold: 2, checkTimeoutSeconds: 0.8 },
    hosts: [
      {
        name: "gpu-ok",
        serving: { preset: "llama-bf16-small" },
        faults: { sglang: FAST },
        waitHealthy: true,
      },
      {
        name: "gpu-nan",
        serving: { preset: "llama-bf16-small" },
        faults: { sglang: FAST },
        waitHealthy: true,
      },
      {
        name: "crashy",
        gpus: "h200-1gpu",
        serving: { preset: "llama-bf16-small" },
        faults: { sglang: FAST },
        waitHealthy: true,
      },
    ],
  });
  bench.hub.addModel(makeModel("llama-bf16-small", { id: "sim-org/metrics-good", gated: false }));
  bench.hub.addModel(makeModel("llama-bf16-small", { id: "sim-org/metrics-nan", gated: false }));
  await bench.startBot();
  base = `http://127.0.0.1:${bench.env.PORT}`;
  swaps = new SwapDriver(bench);
}, 60_000);

afterAll(async () => {
  await swaps?.close();
  await bench?.stop();
});

async function scrape(url = base): Promise<{ families: Map<string, ParsedFamily>; text: string }> {
  const res = await fetch(`${url}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
  const text = await res.text();
  return { families: parseExposition(text), text };
}

const alertsOf = (host: string) =>
  bench.slack.messages(CHANNEL).filter((m) => m.text.startsWith(`🚨 ${host} is not serving`));
const recoveriesOf = (host: string) =>
  bench.slack.messages(CHANNEL).filter((m) => m.text.startsWith(`✅ ${host} is serving again`));

const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;

describe("/metrics", () => {
  it("counts a swap, a rolled-back swap, their stages and downtime, a health alert, Slack's 429 and the queues", async () => {
    // crashy's server dies and every restart crashes: the monitor opens an incident and alerts
    const crashy = bench.host("crashy");
    await crashy.sim.setFault("sglang", { ...FAST, mode: "crash-on-start" });
    const pid = await until(async () => (await crashy.sim.unitState(crashy.unit)).mainPid || undefined, {
      what: "crashy's MainPID",
    });
    process.kill(pid, "SIGKILL");
    // gpu-nan's new model answers NaN: the sanity gate rolls it back
    await bench
      .host("gpu-nan")
      .sim.setFault("sglang", { ...FAST, models: { "metrics-nan": { mode: "nan" } } });
    // Slack answers the next post with 429 (Retry-After 1 s) and refuses the bot's next reaction
    bench.slack.forceRateLimit("chat.postMessage", 1, 1);
    bench.slack.failNext("reactions.add", "already_reacted");

    // meanwhile, the incident: scraped while it is open, then fixed by hand and scraped again below
    const incident = (async () => {
      await until(async () => alertsOf("crashy")[0], { what: "the alert for crashy" });
      const { families } = await scrape();
      const value = (name: string, labels: Record<string, string> = {}) =>
        sampleValue(families, name, labels);
      expect(value("modelswap_host_healthy", { host: "crashy" })).toBe(0);
      expect(value("modelswap_host_incident_open", { host: "crashy" })).toBe(1);
      expect(value("modelswap_host_consecutive_failures", { host: "crashy" })).toBeGreaterThanOrEqual(3);
      expect(value("modelswap_alerts_total", { host: "crashy", kind: "alert" })).toBe(1);
      expect(value("modelswap_alerts_total", { host: "crashy", kind: "recovery" })).toBe(0);
      const lastCheck = value("modelswap_host_last_check_timestamp_seconds", { host: "crashy" })!;
      expect(Math.abs(Date.now() / 1000 - lastCheck)).toBeLessThan(10);
      await until(
        async () => ((await crashy.sim.unitState(crashy.unit)).activeState === "failed" ? true : undefined),
        { what: "systemd to give up on crashy" },
      );
      await crashy.sim.setFault("sglang", FAST);
      expect((await crashy.sim.systemctl("reset-failed", crashy.unit)).code).toBe(0);
      expect((await crashy.sim.systemctl("start", crashy.unit)).code).toBe(0);
      await until(async () => recoveriesOf("crashy")[0], { what: "the recovery of crashy" });
    })();

    const good = await swaps.request("sim-org/metrics-good", "gpu-ok");
    const nan = await swaps.request("sim-org/metrics-nan", "gpu-nan");
    await Promise.all([swaps.approve(good.ts), swaps.approve(nan.ts)]);
    await Promise.all([
      swaps.outcome(good.ts, /Swapped/, 45_000),
      swaps.outcome(nan.ts, /Rolled back/, 45_000),
    ]);
    const goodRecord = (await swaps.record(swaps.swapId(good.ts)))!;
    const nanRecord = (await swaps.record(swaps.swapId(nan.ts)))!;
    await incident;

    // the new unit on gpu-ok passes its checks once the swap let go of the host
    const { families, text } = await until(
      async () => {
        const s = await scrape();
        const healthy = (host: string) => sampleValue(s.families, "modelswap_host_healthy", { host }) === 1;
        return healthy("gpu-ok") && healthy("crashy") ? s : undefined;
      },
      { what: "gpu-ok (after its swap) and crashy (after its fix) to be checked healthy" },
    );
    expect(alertsOf("crashy")).toHaveLength(1);
    expect(recoveriesOf("crashy")).toHaveLength(1);
    const value = (name: string, labels: Record<string, string> = {}) => sampleValue(families, name, labels);

    // every family is documented and typed
    for (const f of families.values()) {
      expect(f.help, f.name).not.toBe("");
      expect(f.type, f.name).not.toBe("untyped");
    }

    // swaps by outcome and host
    expect(families.get("modelswap_swaps_total")?.type).toBe("counter");
    expect(value("modelswap_swaps_total", { host: "gpu-ok", outcome: "succeeded" })).toBe(1);
    expect(value("modelswap_swaps_total", { host: "gpu-nan", outcome: "rolled_back" })).toBe(1);
    expect(value("modelswap_swaps_total", { host: "gpu-nan", outcome: "succeeded" })).toBe(0);
    expect(value("modelswap_swaps_total", { host: "crashy", outcome: "failed" })).toBe(0);

    // stage durations: both swaps switched and ran the sanity gate; only the good one benchmarked
    expect(families.get("modelswap_stage_duration_seconds")?.type).toBe("histogram");
    const stageCount = (stage: string) => value("modelswap_stage_duration_seconds_count", { stage });
    expect(stageCount("switch")).toBe(2);
    expect(stageCount("health")).toBe(2);
    expect(stageCount("sanity")).toBe(2);
    expect(stageCount("approval")).toBe(2);
    expect(stageCount("benchmark")).toBe(1);
    expect(value("modelswap_stage_duration_seconds_bucket", { stage: "switch", le: "+Inf" })).toBe(2);
    // bench swaps are quick: every switch took under two minutes, so both are in the le="120" bucket
    expect(value("modelswap_stage_duration_seconds_bucket", { stage: "switch", le: "120" })).toBe(2);
    expect(value("modelswap_stage_duration_seconds_sum", { stage: "download" })).toBeGreaterThan(0);
    const les = families
      .get("modelswap_stage_duration_seconds")!
      .samples.filter((s) => s.labels.stage === "resolve" && s.name.endsWith("_bucket"))
      .map((s) => s.labels.le);
    expect(les).toEqual([
      "1",
      "5",
      "15",
      "30",
      "60",
      "120",
      "300",
      "600",
      "1200",
      "1800",
      "3600",
      "7200",
      "+Inf",
    ]);

    // downtime: the card's for the success; stop → the old unit healthy again for the rolled-back one
    const downtime = goodRecord.downtimeSeconds!;
    expect(downtime).toBeGreaterThan(0);
    expect(value("modelswap_swap_downtime_seconds_count", { host: "gpu-ok", outcome: "succeeded" })).toBe(1);
    expect(
      value("modelswap_swap_downtime_seconds_sum", { host: "gpu-ok", outcome: "succeeded" }),
    ).toBeCloseTo(downtime, 3);
    expect(value("modelswap_swap_last_downtime_seconds", { host: "gpu-ok" })).toBeCloseTo(downtime, 3);
    // one number everywhere: the rollback measured it from the old unit's stop to its health, a few ms
    // before the swap finished (comparing with finishedAt failed by 1 ms when the record was written late)
    const rolledBackDowntime = nanRecord.downtimeSeconds!;
    const untilFinished =
      (Date.parse(nanRecord.finishedAt!) - Date.parse(nanRecord.switch!.oldStoppedAt!)) / 1000;
    expect(rolledBackDowntime).toBeGreaterThan(0);
    expect(rolledBackDowntime).toBeLessThanOrEqual(untilFinished);
    expect(
      value("modelswap_swap_downtime_seconds_sum", { host: "gpu-nan", outcome: "rolled_back" }),
    ).toBeCloseTo(rolledBackDowntime, 3);

    // health per host: crashy's incident (scraped above while open) is closed, with one alert and one recovery
    expect(value("modelswap_host_healthy", { host: "crashy" })).toBe(1);
    expect(value("modelswap_host_incident_open", { host: "crashy" })).toBe(0);
    expect(value("modelswap_host_consecutive_failures", { host: "crashy" })).toBe(0);
    expect(value("modelswap_alerts_total", { host: "crashy", kind: "alert" })).toBe(1);
    expect(value("modelswap_alerts_total", { host: "crashy", kind: "recovery" })).toBe(1);
    expect(value("modelswap_alerts_total", { host: "gpu-ok", kind: "alert" })).toBe(0);
    expect(value("modelswap_alerts_total", { host: "gpu-nan", kind: "page" })).toBe(0);

    // Slack: the forced 429 was waited out and counted, the refused reaction too
    const answered429 = bench.slack.calls("chat.postMessage").filter((c) => c.status === 429).length;
    expect(answered429).toBeGreaterThanOrEqual(1);
    expect(
      value("modelswap_slack_api_calls_total", { method: "chat.postMessage", result: "rate_limited" }),
    ).toBe(answered429);
    expect(value("modelswap_slack_rate_limit_wait_seconds_total", { method: "chat.postMessage" })).toBe(
      answered429,
    );
    const posts = bench.slack.calls("chat.postMessage").filter((c) => c.ok).length;
    expect(value("modelswap_slack_api_calls_total", { method: "chat.postMessage", result: "ok" })).toBe(
      posts,
    );
    expect(value("modelswap_slack_api_calls_total", { method: "reactions.add", result: "error" })).toBe(1);
    expect(
      value("modelswap_slack_api_errors_total", { method: "reactions.add", error: "already_reacted" }),
    ).toBe(1);

    // BullMQ's own counts, one family for all queues
    expect(families.get("bullmq_job_count")?.type).toBe("gauge");
    expect(value("bullmq_job_count", { queue: "swaps", state: "completed" })).toBe(2);
    expect(value("bullmq_job_count", { queue: "swaps", state: "active" })).toBe(0);
    expect(value("bullmq_job_completed_total", { queue: "swaps" })).toBe(2);
    expect(value("bullmq_job_count", { queue: "monitor", state: "failed" })).toBe(0);
    expect(value("bullmq_job_count", { queue: "commands", state: "waiting" })).toBe(0);
    expect(text.match(/^# TYPE bullmq_job_count /gm)).toHaveLength(1);

    expect(value("modelswap_redis_up")).toBe(1);
    expect(value("modelswap_swaps_in_progress", { host: "gpu-ok" })).toBeUndefined();
  }, 58_000);
});

describe("the queue dashboard", () => {
  it("is off unless MODELSWAP_DASHBOARD_PASSWORD is set", async () => {
    expect((await fetch(`${base}/admin/queues`)).status).toBe(404);
    expect(
      (await fetch(`${base}/admin/queues/api/queues`, { headers: { authorization: basic("admin", "x") } }))
        .status,
    ).toBe(404);
  });

  it("asks for the password, refuses a wrong one, opens read-only with the right one (on METRICS_PORT when set), and never logs it", async () => {
    // with METRICS_PORT, /metrics and the dashboard leave the Slack-facing port
    const metricsPort = await freePort();
    bench.env.MODELSWAP_DASHBOARD_PASSWORD = PASSWORD;
    bench.env.METRICS_PORT = String(metricsPort);
    const second = await bench.startBot({ bot: true, worker: false });
    delete bench.env.MODELSWAP_DASHBOARD_PASSWORD;
    delete bench.env.METRICS_PORT;
    expect(second.opsPort).toBe(metricsPort);
    const slackPort = `http://127.0.0.1:${second.port}`;
    const rightAuth = { authorization: basic("admin", PASSWORD) };
    expect((await fetch(`${slackPort}/metrics`)).status).toBe(404);
    expect((await fetch(`${slackPort}/admin/queues`, { headers: rightAuth })).status).toBe(404);
    expect((await fetch(`${slackPort}/healthz`)).status).toBe(200);
    const url = `http://127.0.0.1:${metricsPort}`;
    expect((await fetch(`${url}/metrics`)).status).toBe(200);

    const none = await fetch(`${url}/admin/queues`);
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toMatch(/^Basic realm=/);
    for (const [user, password] of [
      ["admin", "wrong-password-123"],
      ["admin", `${PASSWORD}x`],
      ["admin", PASSWORD.slice(0, -1)],
      ["someone", PASSWORD],
    ] as const) {
      const res = await fetch(`${url}/admin/queues/api/queues`, {
        headers: { authorization: basic(user, password) },
      });
      expect(res.status, `${user}:${password}`).toBe(401);
      expect(await res.text()).not.toContain("swaps");
    }

    const auth = { authorization: basic("admin", PASSWORD) };
    const page = await fetch(`${url}/admin/queues`, { headers: auth });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain("modelswap queues");
    const asset = /href="(static\/css\/[^"]+\.css)"/.exec(html)?.[1];
    expect(asset).toBeDefined();
    expect((await fetch(`${url}/admin/queues/${asset}`, { headers: auth })).status).toBe(200);
    const api = await fetch(`${url}/admin/queues/api/queues`, { headers: auth });
    expect(api.status).toBe(200);
    const queues = (
      (await api.json()) as {
        queues: { name: string; readOnlyMode: boolean; counts: Record<string, number> }[];
      }
    ).queues;
    expect(queues.map((q) => q.name).sort()).toEqual(["commands", "monitor", "reports", "swaps"]);
    expect(queues.every((q) => q.readOnlyMode)).toBe(true);
    expect(queues.find((q) => q.name === "swaps")?.counts.completed).toBe(2);

    // a process without workers is healthy on Redis alone
    const health = await fetch(`${url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ ok: true, redis: "ok", workers: {} });

    // the password, and the header that carries it, are redacted wherever they would be logged
    second.log.warn(
      { seen: PASSWORD, header: auth.authorization },
      "a line that carries the dashboard password",
    );
    await new Promise<void>((resolve) => second.log.flush(() => resolve()));
    await waitForLog(join(bench.dir, "bot.log"), /a line that carries the dashboard password/, {
      timeoutMs: 5_000,
    });
    const log = await readFile(join(bench.dir, "bot.log"), "utf8");
    expect(log).not.toContain(PASSWORD);
    expect(log).not.toContain(Buffer.from(`admin:${PASSWORD}`).toString("base64"));
    await second.stop();
  }, 30_000);
});

describe("/healthz", () => {
  it("answers 200 with Redis and every worker running, 503 saying why when Redis is down", async () => {
    const ok = await fetch(`${base}/healthz`);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({
      ok: true,
      redis: "ok",
      workers: { commands: "running", swaps: "running", reports: "running", monitor: "running" },
    });

    // a worker-only process has no Slack port: it serves /healthz and /metrics on its own
    const worker = await bench.startBot({ bot: false, worker: true });
    expect(worker.port).toBeUndefined();
    expect(worker.opsPort).toBe(Number(bench.env.PORT));
    const workerUrl = `http://127.0.0.1:${worker.opsPort}`;
    expect((await fetch(`${workerUrl}/healthz`)).status).toBe(200);
    const { families } = await scrape(workerUrl);
    expect(sampleValue(families, "modelswap_swaps_total", { host: "gpu-ok", outcome: "succeeded" })).toBe(1);
    expect((await fetch(`${workerUrl}/slack/events`, { method: "POST" })).status).toBe(404);

    await bench.redis.stop();
    try {
      const down = await fetch(`${base}/healthz`);
      expect(down.status).toBe(503);
      const body = (await down.json()) as { ok: boolean; redis: string; problems: string[] };
      expect(body.ok).toBe(false);
      // the connection's own words, which depend on how far ioredis got in noticing the loss
      expect(body.redis).toMatch(
        /^unreachable: (not connected, (reconnecting|connecting|close)|Stream isn't writeable)/,
      );
      expect(body.problems.join("\n")).toMatch(/Redis does not answer/);
      // a scrape still answers: this process's counters, and Redis marked down
      const during = await scrape();
      expect(sampleValue(during.families, "modelswap_redis_up")).toBe(0);
      expect(during.families.has("modelswap_swaps_total")).toBe(false);
      expect(
        sampleValue(during.families, "modelswap_slack_api_calls_total", {
          method: "chat.postMessage",
          result: "rate_limited",
        }),
      ).toBe(1);
    } finally {
      await bench.redis.start();
    }
    await until(async () => ((await fetch(`${base}/healthz`)).status === 200 ? true : undefined), {
      what: "/healthz to be 200 again",
    });

    await worker.stop();
  }, 30_000);

  it("reports a worker that is closing (shutdown) as not healthy", async () => {
    const redis = new Redis(bench.redis.url, { maxRetriesPerRequest: null });
    const worker = new Worker("health-probe", async () => undefined, {
      connection: redis,
      prefix: "{modelswap-test}",
    });
    try {
      expect(await checkBotHealth(redis, [worker])).toEqual({
        ok: true,
        redis: "ok",
        workers: { "health-probe": "running" },
      });
      const closing = worker.close();
      const during = await checkBotHealth(redis, [worker]);
      expect(during.ok).toBe(false);
      expect(during.workers).toEqual({ "health-probe": "closing" });
      expect(during.problems).toEqual(["the health-probe worker is closing"]);
      await closing;
    } finally {
      redis.disconnect();
    }
  });
});
