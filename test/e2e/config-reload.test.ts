import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { MonitorQueue } from "../../src/queue/monitor-queue.ts";
import type { AuditEntry } from "../../src/store/audit-log.ts";
import { type Bench, CHANNEL, type ChildBot, USERS } from "../../testbench/bench.ts";
import { modelswapBin } from "../../testbench/modelswap-bin.ts";
import { addSimModel, logLines, type SwapDriver, waitForLog } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * Config reload (issue #30) with two real processes started from the bench — `modelswap bot` and
 * `modelswap worker` — sharing one config file, edited as an editor saves it (a new file renamed over the
 * old one): an approver and a host added take effect in both without a restart; a host a swap holds keeps
 * its swap's settings until that swap ends; a bad file changes nothing and each process says why, in the
 * words of `modelswap config check`; a restart-only setting is kept and said; every reload is in the audit
 * stream, by name, and no secret is in it or in the logs.
 */
let bench: Bench;
let swaps: SwapDriver;
let bot: ChildBot;
let worker: ChildBot;
/** The first swap: asked before the edit, approved after it. */
let cardTs: string;
let swapId: string;
/** Every SSH key path the config named at some time (gpu-2's came and went with reloads). */
const keyPaths: string[] = [];

useSwapBench(
  {
    hosts: [{ name: "gpu-1", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } }],
    swaps: { healthTimeoutSeconds: 30 },
  },
  (b, s) => {
    bench = b;
    swaps = s;
  },
);

beforeAll(async () => {
  [bot, worker] = await Promise.all([bench.spawnBot({ role: "bot" }), bench.spawnBot({ role: "worker" })]);
  for (const child of [bot, worker])
    await waitForLog(child.logPath, /modelswap started/, { what: "the process to be up", timeoutMs: 60_000 });
}, 120_000);

/** A reload's log line: the fields these tests read. */
interface LogLine {
  level: number;
  msg: string;
  process: string;
  trigger: string;
  sha256: string;
  settings: string[];
  host: string;
  swap: string;
  problems: { setting: string; what: string; fix: string }[];
}

/** Each process's log lines with this `code`, parsed. */
async function logged(child: ChildBot, code: string): Promise<LogLine[]> {
  return (await logLines(child.logPath))
    .filter((line) => line.includes(`"code":"${code}"`))
    .map((line) => JSON.parse(line) as LogLine);
}

/** Waits until both processes have logged `count` lines with this code; the last of each. */
async function bothLogged(code: string, count: number): Promise<[LogLine, LogLine]> {
  const [b, w] = await Promise.all(
    [bot, worker].map(async (child) => {
      await waitForLog(child.logPath, new RegExp(`"code":"${code}"`), {
        count,
        what: `${code} ×${count} in ${child === bot ? "the bot" : "the worker"}'s log`,
        timeoutMs: 20_000,
      });
      return (await logged(child, code)).at(-1)!;
    }),
  );
  return [b!, w!];
}

async function configAudit(): Promise<AuditEntry[]> {
  const entries = await (await swaps.store()).audit.read({ limit: 200 });
  return entries.filter((e) => e.kind === "config");
}

/** `/llm status <host>` as alice: the bot's private answer that names the host. */
async function statusOf(host: string): Promise<string> {
  const before = bench.slack.ephemerals(CHANNEL, USERS.alice).length;
  const command = await bench.slack.command(USERS.alice, `status ${host}`, { channel: CHANNEL });
  const ack = command.ackResponse?.text ?? "";
  if (!ack.includes("Checking")) return ack;
  const answer = await bench.slack.waitFor(
    () =>
      bench.slack
        .ephemerals(CHANNEL, USERS.alice)
        .slice(before)
        .find((m) => m.source === "api" && m.text.includes(`${host}:`)),
    { timeoutMs: 20_000, what: `the status of ${host}` },
  );
  return `${answer.text}\n${JSON.stringify(answer.blocks)}`;
}

describe("config reload across two processes", () => {
  it("before the edit: a swap waits for approval, and erin's ✅ does not count (she is no approver)", async () => {
    const card = await swaps.request(addSimModel(bench, "reload-one"), "gpu-1");
    cardTs = card.ts;
    swapId = swaps.swapId(card.ts);
    await swaps.plan(cardTs);
    await swaps.approve(cardTs, USERS.erin);
    await bench.slack.waitFor(
      () => bench.slack.ephemerals(CHANNEL, USERS.erin).find((e) => e.text.includes("Only approvers")),
      { what: "erin told her ✅ does not count" },
    );
    expect(await swaps.decision(swapId)).toBeUndefined();
  }, 90_000);

  it("one edit — erin an approver, a new host gpu-2, gpu-1's unitDir moved — reaches both processes without a restart", async () => {
    const gpu2 = await bench.addHost({
      name: "gpu-2",
      gpus: "h200-1gpu",
      serving: { preset: "llama-bf16-small" },
    });
    keyPaths.push((gpu2.ssh as { privateKeyPath: string }).privateKeyPath);
    const elsewhere = join(bench.dir, "units-elsewhere");
    await bench.editConfig((config) => {
      config.approvers.users.push(USERS.erin);
      config.hosts.push(gpu2);
      config.hosts[0].unitDir = elsewhere;
    });
    const [b, w] = await bothLogged("CONFIG_RELOADED", 1);
    // the same file in both, read because it changed
    expect(b.sha256).toMatch(/^[0-9a-f]{12}$/);
    expect(w.sha256).toBe(b.sha256);
    // one of them read it because the file changed; the other either saw the change too, or was told by
    // the first's note before its own watcher fired (a loaded machine: the suite failed once on "note")
    expect([b, w].some((line) => line.trigger === "file")).toBe(true);
    for (const line of [b, w]) {
      expect(["file", "note"]).toContain(line.trigger);
      expect(line.msg).toContain(`approvers added: ${USERS.erin}`);
      expect(line.msg).toContain("hosts added: gpu-2");
      expect(line.msg).toContain("hosts changed: gpu-1 (unitDir)");
      // the host the swap holds keeps that swap's settings: said, by both
      expect(line.msg).toContain(
        `gpu-1 keeps the settings its running swap ${swapId} started with until that swap ends`,
      );
    }
    expect(w.process).toBe(`worker@${hostname()}:${worker.pid}`);
    expect(b.process).toBe(`bot@${hostname()}:${bot.pid}`);

    // each process wrote its reload to the audit stream: who, and what changed, by name
    const audit = await until(
      async () => {
        const entries = await configAudit();
        return entries.length >= 2 ? entries : undefined;
      },
      { what: "two config entries in the audit stream" },
    );
    expect(audit.map((e) => e.process).sort()).toEqual([b.process, w.process].sort());
    for (const entry of audit) {
      expect(entry.who).toBe("modelswap");
      expect(entry.detail).toContain(`config reloaded (the file changed), file sha256 ${b.sha256}`);
      expect(entry.detail).toContain(`approvers added: ${USERS.erin}`);
      expect(entry.detail).toContain("hosts added: gpu-2");
    }
  }, 90_000);

  it("/llm status gpu-2 shows the new host", async () => {
    const answer = await statusOf("gpu-2");
    expect(answer).toContain("🟢 gpu-2: healthy");
    expect(answer).toContain("sglang-gpu-2.service");
  }, 60_000);

  it("erin's ✅ now approves, and the swap ends with the settings it started with (the new unitDir after it)", async () => {
    const plan = await swaps.plan(cardTs);
    await bench.slack.unreact(USERS.erin, CHANNEL, plan.ts, "white_check_mark");
    await swaps.approve(cardTs, USERS.erin);
    const decision = await swaps.untilDecided(swapId);
    expect(decision).toMatchObject({ approved: true, by: USERS.erin });
    // the unit went where the host's settings said when the swap began: a unit written to the new
    // unitDir mid-swap would be one systemd never sees, and the swap would have rolled back
    const card = await swaps.outcome(cardTs, /Swapped|Rolled back|Failed/, 180_000);
    expect(card.text).toMatch(/Swapped/);
    const record = await swaps.record(swapId);
    const unit = record?.plan?.unitName ?? "";
    expect(unit).not.toBe("");
    expect(await readFile(join(bench.host("gpu-1").sim.unitDir, unit), "utf8")).toContain("ExecStart=");
    // once it has ended, the host's new settings are in use
    await waitForLog(worker.logPath, /"code":"CONFIG_HOST_SETTLED"/, { what: "gpu-1's settings to settle" });
    const [settled] = await logged(worker, "CONFIG_HOST_SETTLED");
    expect(settled).toMatchObject({ host: "gpu-1", swap: swapId });
  }, 240_000);

  it("a bad edit keeps the config in use, and each process says why as `modelswap config check` does", async () => {
    const good = await readFile(bench.configPath, "utf8");
    await bench.editConfig((config) => {
      config.approvers.users.push("mallory");
      config.helth = { intervalSeconds: 5 };
    });
    const [b, w] = await bothLogged("CONFIG_INVALID", 1);
    const check = await configCheck();
    expect(check.code).toBe(1);
    const problems = check.stdout.slice(check.stdout.indexOf("\n") + 1).trimEnd();
    expect(problems).toContain("✗ config approvers.users[3]: not a Slack user id");
    expect(problems).toContain("✗ config helth: unknown setting: did you mean health?");
    for (const line of [b, w]) {
      expect(line.level).toBe(50);
      expect(line.msg).toContain("config not reloaded (the file changed)");
      expect(line.msg).toContain("has 2 problem(s); the config in use is unchanged");
      // the same words, setting by setting, as config check
      expect(line.msg).toContain(problems);
      expect(line.problems.map((p) => p.setting)).toEqual(["approvers.users[3]", "helth"]);
      expect(line.problems[0]?.fix).toContain("use the member id (U…)");
    }
    // nothing changed: gpu-2 still answers, and a refusal is in the audit stream for each process
    expect(await statusOf("gpu-2")).toContain("🟢 gpu-2: healthy");
    const refused = (await configAudit()).filter((e) => e.detail.startsWith("config not reloaded"));
    expect(refused).toHaveLength(2);
    expect(refused[0]?.detail).toContain("approvers.users[3]: not a Slack user id");
    await bench.writeConfig(good);
    await bothLogged("CONFIG_UNCHANGED", 1);
  }, 90_000);

  it("a restart-only setting is kept with a warning, while the rest applies: gpu-2 removed, health every 45 s", async () => {
    await bench.editConfig((config) => {
      config.slack.channel = "C0ELSEWHR1";
      config.health.intervalSeconds = 45;
      config.hosts = config.hosts.filter((h: { name: string }) => h.name !== "gpu-2");
      config.hosts[0].unitDir = bench.host("gpu-1").sim.unitDir;
    });
    const [b, w] = await bothLogged("CONFIG_RESTART_NEEDED", 1);
    for (const line of [b, w]) {
      expect(line.level).toBe(40);
      expect(line.settings).toEqual(["slack.channel"]);
      expect(line.msg).toContain("restart it for the new one");
    }
    const [, reloaded] = await bothLogged("CONFIG_RELOADED", 2);
    expect(reloaded.msg).toContain("hosts removed: gpu-2");
    expect(reloaded.msg).toContain("settings changed: health.intervalSeconds");
    // the worker's monitor follows: one schedule, gpu-1's, every 45 s
    const monitor = new MonitorQueue(await (await swaps.store()).redis);
    try {
      const schedulers = await until(
        async () => {
          const now = await monitor.schedulers();
          return now.length === 1 && now[0]?.everyMs === 45_000 ? now : undefined;
        },
        { what: "the monitor's schedules to follow the reload" },
      );
      expect(schedulers.map((s) => s.host)).toEqual(["gpu-1"]);
    } finally {
      await monitor.close();
    }
    expect(await statusOf("gpu-2")).toContain("Unknown host");
  }, 90_000);

  it("an approver removed by an edit can approve no more, from the next ✅ on", async () => {
    await bench.editConfig((config) => {
      config.slack.channel = CHANNEL;
      config.approvers.users = config.approvers.users.filter((u: string) => u !== USERS.erin);
    });
    const [b] = await bothLogged("CONFIG_RELOADED", 3);
    expect(b.msg).toBe(`config reloaded (the file changed): approvers removed: ${USERS.erin}`);
    const card = await swaps.request(addSimModel(bench, "reload-two"), "gpu-1");
    const id = swaps.swapId(card.ts);
    const told = () =>
      bench.slack.ephemerals(CHANNEL, USERS.erin).filter((e) => e.text.includes("Only approvers"));
    const before = told().length;
    await swaps.approve(card.ts, USERS.erin);
    await bench.slack.waitFor(() => told().length > before, { what: "erin told her ✅ does not count" });
    expect(await swaps.decision(id)).toBeUndefined();
    await bench.slack.command(USERS.alice, `cancel ${id}`, { channel: CHANNEL });
    await swaps.untilRecord(id, (r) => r.outcome !== undefined, { what: "the swap to be cancelled" });
  }, 90_000);

  it("no secret is in either process's log or in the audit stream", async () => {
    const config = await readFile(bench.configPath, "utf8");
    // the key paths say where credentials live: gpu-1's, and gpu-2's, which came with a reload
    keyPaths.push(...[...config.matchAll(/privateKeyPath: (\S+)/g)].map((m) => m[1]!));
    expect(keyPaths).toHaveLength(2);
    const logs = `${(await logLines(bot.logPath)).join("\n")}\n${(await logLines(worker.logPath)).join("\n")}`;
    const audit = JSON.stringify(await (await swaps.store()).audit.read({ limit: 500 }));
    expect(audit).toContain('"kind":"config"');
    for (const secret of [bench.botToken, bench.signingSecret, ...keyPaths]) {
      expect(logs).not.toContain(secret);
      expect(audit).not.toContain(secret);
    }
  });
});

const run = promisify(execFile);

/** The real `modelswap config check` of the bench's file, with the bench's environment. */
async function configCheck(): Promise<{ code: number; stdout: string }> {
  const bin = modelswapBin();
  try {
    const { stdout } = await run(process.execPath, [bin.path, "config", "check", "--role", "worker"], {
      env: { ...process.env, ...bench.env, ...bin.env },
      timeout: 60_000,
    });
    return { code: 0, stdout };
  } catch (error) {
    const e = error as { code: number; stdout: string };
    return { code: e.code, stdout: e.stdout };
  }
}
