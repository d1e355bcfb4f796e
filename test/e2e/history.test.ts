import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ReportQueue } from "../../src/queue/report-queue.ts";
import { AuditLog } from "../../src/store/audit-log.ts";
import { keys } from "../../src/store/keys.ts";
import { type Bench, CHANNEL, QUICK_BENCH, startBench, USERS } from "../../testbench/bench.ts";
import { makeModel } from "../../testbench/hub/index.ts";
import type { SlackMessage } from "../../testbench/slack/index.ts";
import { SwapDriver, waitForLog } from "../../testbench/swap-driver.ts";

/**
 * The ledger and the audit stream end to end: two real swaps on one simulated host (request, ✅ by an
 * approver, switch, health, sanity, benchmark), then `/llm history` in the channel, the audit events in
 * the real Redis, and both still there after the bot and Redis are restarted.
 */
const LLAMA = "sim-org/open-llama-1B";
const QWEN = "nvidia/Qwen3.5-397B-A17B-NVFP4";
const HOST = "gpu-1";
let bench: Bench;
let redis: Redis;
let swaps: SwapDriver;
const swapIds: string[] = [];

beforeAll(async () => {
  bench = await startBench({
    ...QUICK_BENCH,
    swaps: { pollSeconds: 0.2, cardUpdateSeconds: 1, healthTimeoutSeconds: 8 },
    hosts: [{ name: HOST, gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } }],
  });
  bench.hub.addModel(makeModel("llama-bf16-small", { id: LLAMA, gated: false }));
  bench.hub.addModel(makeModel("qwen3.5-moe-nvfp4"));
  await bench.startBot();
  redis = new Redis(bench.redis.url, { maxRetriesPerRequest: 1 });
  redis.on("error", () => undefined);
  swaps = new SwapDriver(bench);
}, 120_000);

afterAll(async () => {
  await swaps?.close();
  redis?.disconnect();
  await bench?.stop();
});

/** `/llm swap …` as alice, ✅ (or ❌) on the plan by bob, and the card's outcome; returns the swap's id. */
async function swapTo(model: string, decision: "approve" | "reject" = "approve"): Promise<string> {
  const card = await swaps.request(model, HOST);
  if (decision === "approve") await swaps.approve(card.ts);
  else await swaps.reject(card.ts);
  await swaps.outcome(card.ts, decision === "approve" ? /Swapped/ : /Rejected/, 90_000);
  return swaps.swapId(card.ts);
}

/** `/llm history …` as a user; returns the table the worker posts to the channel. */
async function history(user: string, args: string): Promise<SlackMessage> {
  const before = bench.slack.messages(CHANNEL).length;
  const ack = await bench.slack.command(user, `history ${args}`, { channel: CHANNEL });
  expect(ack.status).toBe(200);
  expect(ack.ackMs).toBeLessThan(3000);
  expect(ack.ackResponse?.text).toContain("Reading the swap history");
  return await bench.slack.waitFor(
    () =>
      bench.slack
        .messages(CHANNEL)
        .slice(before)
        .find((m) => m.text.startsWith("Swap history")),
    { timeoutMs: 15_000, what: `the answer to /llm history ${args}` },
  );
}

/** The table's entries, in order (a section holds several, separated by a blank line). */
function entries(m: SlackMessage): string[] {
  return (m.blocks as unknown as { type: string; text?: { text: string } }[])
    .filter((b) => b.type === "section" && b.text !== undefined)
    .flatMap((b) => b.text!.text.split("\n\n"));
}

describe("ledger, audit and /llm history", () => {
  it("lists two swaps on a host newest first, with who, sha, downtime and the benchmark's change", async () => {
    swapIds.push(await swapTo(LLAMA));
    swapIds.push(await swapTo(QWEN));

    const table = await history(USERS.bob, HOST);
    expect(table.text).toContain(`Swap history: ${HOST}`);
    const [second, first, ...more] = entries(table);
    expect(more).toEqual([]);
    // newest first
    expect(second).toContain(`\`${QWEN}\` @ `);
    expect(first).toContain(`\`${LLAMA}\` @ `);
    for (const entry of [first!, second!]) {
      expect(entry).toContain("✅ succeeded");
      expect(entry).toContain(`asked by <@${USERS.alice}>`);
      expect(entry).toContain(`approved by <@${USERS.bob}>`);
      expect(entry).toMatch(/ @ `[0-9a-f]{7}`/);
      expect(entry).toMatch(/downtime [\d.]+ (?:s|min|h|d)(?: \d+ (?:s|min|h))?/);
      expect(entry).toMatch(/\d+ tok\/s at 1 stream.*\d+ tok\/s at 16 streams/);
    }
    // the second swap's numbers against the first one's, in %
    expect(second).toMatch(/tok\/s at 1 stream \([▲▼±]\d+(\.\d)?%\)/);
    expect(second).toMatch(/tok\/s at 16 streams \([▲▼±]\d+(\.\d)?%\)/);
    expect(second).toMatch(new RegExp(`vs \`${LLAMA}\` @ \`[0-9a-f]{7}\`$`));
    // the first swap replaced the config's unit, which no swap measured
    expect(first).toContain("no earlier numbers on this host");
  }, 150_000);

  it("records request, approval, stage outcomes and the outcome in the audit stream, with who and when", async () => {
    const audit = new AuditLog(redis);
    for (const id of swapIds) {
      const events = await audit.read({ swap: id, limit: 200 });
      const kinds = events.map((e) => e.kind);
      expect(kinds).toContain("request");
      expect(kinds).toContain("approval");
      expect(kinds).toContain("outcome");
      expect(events.find((e) => e.kind === "request")).toMatchObject({ who: USERS.alice, host: HOST });
      expect(events.find((e) => e.kind === "approval")).toMatchObject({ who: USERS.bob, host: HOST });
      expect(events.find((e) => e.kind === "outcome")?.detail).toMatch(/^succeeded: /);
      const stages = events
        .filter((e) => e.kind === "stage")
        .map((e) => `${e.stage} ${e.detail.split(":")[0]}`);
      for (const stage of [
        "resolve",
        "preflight",
        "download",
        "build",
        "approval",
        "switch",
        "health",
        "sanity",
        "benchmark",
      ])
        expect(stages, stage).toContain(`${stage} ${stage} done`);
      for (const event of events) {
        expect(event.who).not.toBe("");
        expect(Number.isNaN(Date.parse(event.at))).toBe(false);
      }
      // newest first: the outcome comes before the request
      expect(kinds.indexOf("outcome")).toBeLessThan(kinds.indexOf("request"));
    }
    // the per-host view holds both swaps
    const hostEvents = await audit.read({ host: HOST, limit: 1000 });
    expect(new Set(hostEvents.map((e) => e.swap))).toEqual(new Set(swapIds));
  });

  it("keeps the ledger and the audit stream across a restart of the bot and of Redis", async () => {
    const auditBefore = await new AuditLog(redis).length();
    await bench.stopBots();
    await bench.redis.stop();
    await bench.redis.start();
    await bench.startBot();
    const both = entries(await history(USERS.alice, `${HOST} --limit 2`));
    expect(both).toHaveLength(2);
    expect(both[0]).toContain(`\`${QWEN}\` @ `);
    expect(both[1]).toContain(`\`${LLAMA}\` @ `);
    expect(both[0]).toMatch(/\([▲▼±]\d+(\.\d)?%\)/);
    const one = entries(await history(USERS.alice, `--limit=1 ${HOST}`));
    expect(one).toHaveLength(1);
    expect(one[0]).toContain(`\`${QWEN}\` @ `);
    // the model before lies beyond the limit, and is still found
    expect(one[0]).toContain(`vs \`${LLAMA}\``);
    const fresh = new Redis(bench.redis.url);
    try {
      expect(await new AuditLog(fresh).length()).toBeGreaterThanOrEqual(auditBefore);
      expect((await new AuditLog(fresh).read({ swap: swapIds[0]!, limit: 5 })).length).toBe(5);
    } finally {
      fresh.disconnect();
    }
  }, 60_000);

  it("answers bad input with the usage, an unknown host with the known ones, strangers with a refusal", async () => {
    const jobs = await bench.queuedJobCount();
    for (const args of [
      "--limit 0",
      "--limit 51",
      "--limit ten",
      `${HOST} other`,
      "--since yesterday",
      "--limit",
    ]) {
      const ack = await bench.slack.command(USERS.alice, `history ${args}`, { channel: CHANNEL });
      expect(ack.ackResponse?.text, args).toContain("Usage: `/llm history [host] [--limit N]`");
    }
    const unknown = await bench.slack.command(USERS.alice, "history gpu-9", { channel: CHANNEL });
    expect(unknown.ackResponse?.text).toContain("Unknown host `gpu-9`. Known hosts: gpu-1.");
    const hostile = await bench.slack.command(USERS.alice, "history $(id)", { channel: CHANNEL });
    expect(hostile.ackResponse?.text).toContain("Known hosts: gpu-1.");
    const stranger = await bench.slack.command(USERS.mallory, `history ${HOST}`, { channel: CHANNEL });
    expect(stranger.ackResponse?.text).toContain("not allowed");
    expect(await bench.queuedJobCount()).toBe(jobs);
    // and help lists it
    const help = await bench.slack.command(USERS.alice, "help", { channel: CHANNEL });
    expect(help.ackResponse?.text).toContain("/llm history [host] [--limit N]");
  });

  it("records a rejection with who rejected, and lists it on top without touching the comparison", async () => {
    const id = await swapTo(LLAMA, "reject");
    const events = await new AuditLog(redis).read({ swap: id, limit: 50 });
    expect(events.find((e) => e.kind === "rejection")).toMatchObject({ who: USERS.bob, host: HOST });
    expect(events.find((e) => e.kind === "outcome")?.detail).toMatch(/^rejected: /);
    expect(events.find((e) => e.kind === "stage" && e.stage === "approval")?.detail).toMatch(
      /approval failed/,
    );
    const [rejected, newest] = entries(await history(USERS.alice, `${HOST} --limit 2`));
    expect(rejected).toContain("🚫 rejected");
    expect(rejected).toContain(`rejected by <@${USERS.bob}>`);
    expect(rejected).not.toContain("tok/s");
    expect(newest).toContain(`\`${QWEN}\` @ `);
    expect(newest).toContain(`vs \`${LLAMA}\``);
  }, 60_000);

  it("says a record could not be read, in /llm history and in the bot's log; the reporter skips it and reports the other swaps", async () => {
    // two records in the ledger, the newest, that no version of modelswap wrote: one not JSON, one
    // JSON of another shape (changed by hand, or a restore gone wrong)
    const notJson = "sw-mzzzzzz1-c0ffee";
    const wrongShape = "sw-mzzzzzz2-c0ffee";
    const at = Date.now();
    await redis
      .multi()
      .set(keys.swap(notJson), '{"id": "sw-mzzzzzz1-c0ffee", "host": "gpu-')
      .set(keys.swap(wrongShape), JSON.stringify({ id: wrongShape, host: HOST, step: "warp", stages: 7 }))
      .zadd(keys.ledger, at, notJson, at + 1, wrongShape)
      .zadd(keys.hostLedger(HOST), at, notJson, at + 1, wrongShape)
      .exec();
    try {
      // the swaps that can be read are still listed, with a warning that two could not be
      const all = await history(USERS.alice, HOST);
      expect(entries(all)).toHaveLength(3);
      expect(JSON.stringify(all.blocks)).toContain("⚠️ 2 records could not be read");
      // only the unreadable ones in range: not "no swaps recorded", which would hide them
      const only = await history(USERS.alice, `${HOST} --limit 2`);
      expect(only.text).not.toContain("no swaps recorded");
      expect(JSON.stringify(only.blocks)).not.toContain("No swaps recorded");
      expect(JSON.stringify(only.blocks)).toContain("⚠️ 2 records could not be read");
      const log = join(bench.dir, "bot.log");
      await waitForLog(
        log,
        (l) => l.includes("do not parse") && l.includes(notJson) && l.includes(wrongShape),
        {
          what: "the history job naming the unreadable records",
        },
      );

      // the reporter asked to report them: each skipped with a log line that has the code; other swaps go on
      const reports = new ReportQueue(redis);
      await reports.soon(notJson);
      await reports.soon(wrongShape);
      await reports.close();
      for (const id of [notJson, wrongShape])
        await waitForLog(
          log,
          (l) =>
            l.includes("cannot report a swap whose record does not parse") &&
            l.includes(id) &&
            l.includes("STORE_RECORD_INVALID"),
          { what: `the reporter skipping ${id}` },
        );
      const card = await swaps.request(QWEN, HOST);
      await swaps.approve(card.ts);
      await swaps.outcome(card.ts, /Swapped/, 90_000);
    } finally {
      await redis.del(keys.swap(notJson), keys.swap(wrongShape));
    }
  }, 120_000);
});
