import { readFile } from "node:fs/promises";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { keys } from "../../src/store/keys.ts";
import { type Bench, CHANNEL, type ChildBot, USERS } from "../../testbench/bench.ts";
import { addSimModel, logLines, type SwapDriver, unitOf, waitForLog } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * Outages under a running swap, with real processes: redis-server restarted (AOF, as in
 * docker-compose.yml), sshd stopped and every SSH connection cut, the host away for longer than the
 * bot may wait, and a host key that changes while the bot is connected.
 */
const HOST_RETRY_SECONDS = 6;
let bench: Bench;
let swaps: SwapDriver;

useSwapBench(
  {
    swaps: {
      lockSeconds: 3,
      stalledCheckSeconds: 1,
      healthTimeoutSeconds: 60,
      hostRetrySeconds: HOST_RETRY_SECONDS,
    },
    connectTimeoutSeconds: 2,
    hosts: [
      { name: "gpu-1", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } },
      { name: "gpu-2", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } },
      // left failed on purpose (its host away past the rollback's retries): nobody else's
      { name: "gpu-3", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } },
    ],
  },
  (b, s) => {
    bench = b;
    swaps = s;
  },
);

const addModel = (name: string) => addSimModel(bench, name);

// a test that fails mid-outage must not leave the next one without its host, or with its bot
afterEach(async () => {
  await bench.killChildren();
  await bench.sshd.start();
});

async function slowLoad(host: string, model: string, loadSeconds: number): Promise<void> {
  await bench.host(host).sim.setFault("sglang", { models: { [model]: { loadSeconds } } });
}

/** Waits until a command is answered again, not told the queue is unavailable (the bot reconnected). */
async function queueAnswersAgain(): Promise<void> {
  let last = "";
  await until(
    async () => {
      const ack = await bench.slack.command(USERS.alice, "history gpu-1 --limit 1", { channel: CHANNEL });
      last = ack.ackResponse?.text ?? "";
      return ack.status === 200 && !/QUEUE_UNAVAILABLE/.test(last);
    },
    { what: "the bot's queue to come back", timeoutMs: 30_000, intervalMs: 200 },
  ).catch((error: Error) => {
    throw new Error(`${error.message}: ${last}`);
  });
}

/** Stops redis-server (or SIGKILLs it) and starts it again once the bot has run into the outage. */
async function redisOutage(bot: ChildBot, how: "stop" | "kill"): Promise<void> {
  const lost = /"code":"REDIS_UNREACHABLE"/;
  const before = (await logLines(bot.logPath)).filter((l) => lost.test(l)).length;
  await (how === "stop" ? bench.redis.stop() : bench.redis.kill());
  await waitForLog(bot.logPath, lost, { count: before + 1, what: "the bot to find Redis gone" });
  await bench.redis.start();
}

/** Cuts every SSH connection and stops sshd; starts it again once the swap has found its host unreachable. */
async function sshOutage(swapId: string): Promise<void> {
  const down = Date.now();
  await bench.sshd.cut();
  await swaps.untilRecord(
    swapId,
    (r) => r.hostTrouble !== undefined && Date.parse(r.hostTrouble.since) >= down,
    { what: "the swap to find its host unreachable" },
  );
  await bench.sshd.start();
}

async function auditOf(swapId: string): Promise<string[]> {
  const redis = new Redis(bench.redis.url);
  try {
    const entries = await redis.xrange(keys.audit, "-", "+");
    return entries
      .map(([, fields]) =>
        Object.fromEntries(fields.flatMap((f, i) => (i % 2 === 0 ? [[f, fields[i + 1]]] : []))),
      )
      .filter((e) => e.swap === swapId)
      .map((e) => `${e.kind}:${e.stage ?? ""}`);
  } finally {
    redis.disconnect();
  }
}

describe("redis-server restarted mid-swap", () => {
  it("while the download runs and again while the new model loads: the swap continues, nothing is lost", async () => {
    const model = addModel("redis-restart");
    await slowLoad("gpu-1", "redis-restart", 6);
    bench.hub.setThrottle(1_000_000);
    const bot = await bench.spawnBot();
    const card = await swaps.request(model, "gpu-1");
    const swapId = swaps.swapId(card.ts);
    await swaps.untilRecord(swapId, (r) => (r.download?.bytes ?? 0) > 0, { what: "the download under way" });
    await redisOutage(bot, "stop");
    bench.hub.setThrottle(null);
    // the bot checks the Redis it reconnected to (noeviction, AOF) and says so: it is back
    await waitForLog(bot.logPath, /Redis keeps what modelswap writes/, { count: 2 });
    // and its Slack side answers again (until it has reconnected, a command is told the queue is
    // unavailable, and a reaction would wait for Slack's retry a minute later)
    await queueAnswersAgain();
    await swaps.approve(card.ts);
    await swaps.untilRecord(swapId, (r) => r.step === "health", { what: "the health wait" });
    await redisOutage(bot, "kill"); // SIGKILL this time: only the AOF keeps what was written
    await swaps.outcome(card.ts, /Swapped/);
    const record = await swaps.record(swapId);
    expect(record?.outcome).toBe("succeeded");
    expect(await swaps.startsOf("gpu-1", unitOf(record))).toBe(1);
    expect(swaps.cardsOf(swapId)).toHaveLength(1);
    const audit = await auditOf(swapId);
    for (const event of [
      "request:",
      "approval:",
      "stage:download",
      "stage:build",
      "stage:switch",
      "stage:health",
    ]) {
      expect(audit, event).toContain(event);
    }
    const downloads = (await bench.host("gpu-1").sim.calls()).filter(
      (c) => c.cmd === "hf" && c.argv[0] === "download",
    );
    expect(downloads).toHaveLength(1);
    await bench.killChildren();
  }, 150_000);
});

describe("sshd restarted and connections cut mid-stage", () => {
  it("during the download and the health wait: the stage waits for the host and resumes; the detached download is unaffected", async () => {
    const model = addModel("ssh-cut");
    await slowLoad("gpu-2", "ssh-cut", 6);
    bench.hub.setThrottle(1_000_000);
    const bot = await bench.spawnBot();
    const card = await swaps.request(model, "gpu-2");
    const swapId = swaps.swapId(card.ts);
    await swaps.untilRecord(swapId, (r) => (r.download?.bytes ?? 0) > 0, { what: "the download under way" });
    await sshOutage(swapId);
    bench.hub.setThrottle(null);
    await swaps.approve(card.ts);
    await swaps.untilRecord(swapId, (r) => r.step === "health", { what: "the health wait" });
    await sshOutage(swapId);
    await swaps.outcome(card.ts, /Swapped/);
    const record = await swaps.record(swapId);
    expect(record?.outcome).toBe("succeeded");
    expect(await swaps.startsOf("gpu-2", unitOf(record))).toBe(1);
    const downloads = (await bench.host("gpu-2").sim.calls()).filter(
      (c) => c.cmd === "hf" && c.argv[0] === "download",
    );
    expect(downloads).toHaveLength(1);
    const log = await readFile(bot.logPath, "utf8");
    expect(log).toMatch(/host unreachable; retrying/);
    await bench.killChildren();
  }, 150_000);

  it("a host away for longer than swaps.hostRetrySeconds after the switch: the stage fails saying so, the rollback waits for the host and puts the old service back", async () => {
    const model = addModel("host-away");
    await slowLoad("gpu-1", "host-away", 4);
    await bench.spawnBot();
    const card = await swaps.request(model, "gpu-1");
    const swapId = swaps.swapId(card.ts);
    await swaps.plan(card.ts);
    const oldUnit = (await swaps.record(swapId))?.previous?.unit;
    await swaps.approve(card.ts);
    await swaps.untilRecord(swapId, (r) => r.step === "health", { what: "the health wait" });
    // from before the cut: the bot's first failed try (which starts its clock) can come before stop() returns
    const down = Date.now();
    await bench.sshd.cut();
    await swaps.untilRecord(swapId, (r) => r.step === "rollback", {
      what: "the rollback",
      timeoutMs: 60_000,
    });
    expect(Date.now() - down).toBeGreaterThanOrEqual(HOST_RETRY_SECONDS * 1000 - 500);
    await bench.sshd.start();
    await swaps.outcome(card.ts, /Rolled back/);
    const record = await swaps.record(swapId);
    expect(record?.reason).toMatch(
      /gpu-1 could not be reached for [\d.]+ (?:s|min|h|d)(?: \d+ (?:s|min|h))? \(\d+ tries; swaps\.hostRetrySeconds is 6\)/,
    );
    expect(record?.rollback?.ok).toBe(true);
    expect((await bench.host("gpu-1").sim.unitState(oldUnit!)).activeState).toBe("active");
    expect((await bench.host("gpu-1").sim.unitState(unitOf(record))).activeState).not.toBe("active");
    expect(swaps.threadText(card.ts)).toMatch(/Rolling back/);
    await bench.killChildren();
  }, 150_000);

  it("a host away at the swap's last check for longer than swaps.hostRetrySeconds: the swap stops trying and ends saying so, claiming nothing it could not see", async () => {
    // Found by the fault campaign (seed 689774134, path 148): each new try of the ending step cleared the
    // host's trouble before the last check ran again, so its hostRetrySeconds never ran out and the swap
    // retried for good, until someone cancelled it.
    const model = addModel("host-away-at-end");
    const { sim } = bench.host("gpu-3");
    await bench.spawnBot();
    const card = await swaps.request(model, "gpu-3");
    const swapId = swaps.swapId(card.ts);
    await swaps.plan(card.ts);
    // the last check's look at the unit (a cold swap runs this systemctl show there only)
    await sim.hold("systemctl", " show -p ActiveState -p SubState -p MainPID ");
    await swaps.approve(card.ts);
    await sim.waitHeld("systemctl");
    const down = Date.now();
    await bench.sshd.cut();
    await sim.release("systemctl");
    try {
      const record = await swaps.untilRecord(swapId, (r) => r.outcome !== undefined, {
        what: "the swap to end while its host is away",
        timeoutMs: 90_000,
      });
      // it looked for at least hostRetrySeconds, then ended as failed: nothing could be checked
      expect(Date.now() - down).toBeGreaterThanOrEqual(HOST_RETRY_SECONDS * 1000 - 500);
      expect(record.outcome, record.reason).toBe("failed");
      expect(record.finalCheck).toMatchObject({ ok: false });
      expect(record.finalCheck?.detail).toMatch(
        /nothing could be checked: gpu-3 could not be reached for .*swaps\.hostRetrySeconds is 6/,
      );
    } finally {
      await bench.sshd.start();
    }
    const final = await swaps.finalLine(card.ts);
    expect(final.text).not.toMatch(/now serves/);
    await bench.killChildren();
  }, 150_000);
});

describe("a host key that changes while the bot is connected", () => {
  it("is refused at the next connection and reported; the swap fails before the switch, nothing touched", async () => {
    const model = addModel("key-change");
    await bench.spawnBot();
    const card = await swaps.request(model, "gpu-2");
    const swapId = swaps.swapId(card.ts);
    await swaps.plan(card.ts);
    await swaps.untilRecord(swapId, (r) => r.stages.build.state === "done", {
      what: "download and build done",
    });
    const oldUnit = (await swaps.record(swapId))?.previous?.unit;
    await bench.sshd.rotateHostKey();
    await bench.sshd.dropConnections();
    await swaps.approve(card.ts);
    await swaps.outcome(card.ts, /Failed/);
    const record = await swaps.record(swapId);
    expect(record?.switch).toBeUndefined();
    expect(record?.reason).toMatch(
      /presented host keys SHA256:\S+ \(ED25519\), SHA256:\S+ \(ECDSA\), but the config pins SHA256:\S+; the connection was refused/,
    );
    expect(record?.failure?.code).toBe("HOST_KEY_MISMATCH");
    expect(swaps.card(card.ts).text + JSON.stringify(swaps.card(card.ts).blocks)).toMatch(/host key/);
    // the old service was never touched
    expect((await bench.host("gpu-2").sim.unitState(oldUnit!)).activeState).toBe("active");
    const status = await bench.slack.command("U0ALICE001", "status gpu-2", { channel: "C0LLMOPS01" });
    expect(status.status).toBe(200);
    await bench.killChildren();
  }, 150_000);
});
