import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keys } from "../../src/store/keys.ts";
import { type Bench, type BenchHostSpec, CHANNEL, startBench, USERS } from "../../testbench/bench.ts";
import type { EphemeralMessage } from "../../testbench/slack/index.ts";
import { until } from "../../testbench/until.ts";

/**
 * `/llm status` of a fleet past 25 hosts (issue #16), through the whole bot: 60 hosts behind the bench's
 * one sshd, 50 sharing a sandbox that serves and 10 sharing one that serves nothing. The answer is the
 * summary (the counts, the 10 down hosts named, the healthy ones counted, not listed); `--all` gives
 * every host's line; an unknown host's reply names the closest host and the count, not 60 names.
 */
const HOSTS = 60;
const MONITOR_SECONDS = 20;
let bench: Bench;

beforeAll(async () => {
  const hosts: BenchHostSpec[] = [
    { name: "up-0", gpus: "h200-1gpu", serving: { preset: "llama-bf16-small" } },
    { name: "down-0", gpus: "h200-1gpu", serving: false },
    ...Array.from({ length: 49 }, (_, i) => ({ name: `up-${i + 1}`, sandboxOf: "up-0" })),
    ...Array.from({ length: 9 }, (_, i) => ({ name: `down-${i + 1}`, sandboxOf: "down-0" })),
  ];
  // the production default connect timeout (the bench's 3 s is for tests of unreachable hosts): 60
  // handshakes on a loaded 2-core machine take longer than 3 s
  // the monitor checks each host every 20 s (3 checks a second here) and never alerts: the summary
  // counts the hosts it has just seen healthy instead of probing them
  bench = await startBench({
    hosts,
    connectTimeoutSeconds: 10,
    health: { intervalSeconds: MONITOR_SECONDS, failureThreshold: 100 },
  });
  await bench.startBot();
}, 120_000);

afterAll(async () => {
  await bench?.stop();
});

async function ask(words: string, parts = 1): Promise<EphemeralMessage[]> {
  const before = bench.slack.ephemerals(CHANNEL, USERS.alice).length;
  const command = await bench.slack.command(USERS.alice, `status${words}`, { channel: CHANNEL });
  expect(command.status).toBe(200);
  expect(command.ackResponse?.text).toContain(`Checking ${HOSTS} hosts…`);
  return await bench.slack.waitFor(
    () => {
      const answers = bench.slack
        .ephemerals(CHANNEL, USERS.alice)
        .slice(before)
        .filter((e) => e.source === "api" && e.text.startsWith("Fleet:"));
      return answers.length >= parts ? answers : undefined;
    },
    { timeoutMs: 60_000, what: `the answer to /llm status${words}` },
  );
}

describe("/llm status of a 60-host fleet", () => {
  it("answers with a summary: counts by state, the down hosts named, the healthy ones only counted", async () => {
    const [summary] = await ask("");
    const body = JSON.stringify(summary!.blocks);
    expect(summary!.text, body).toMatch(/^Fleet: 60 hosts, 50 healthy/);
    expect(body).toContain("🟢 healthy *50*");
    for (let i = 0; i < 10; i += 1) expect(body).toContain(`down-${i}`);
    expect(body).not.toMatch(/up-\d/);
    expect(body).toContain("/llm status --all");
    expect(summary!.blocks!.length).toBeLessThanOrEqual(50);
  }, 90_000);

  it("counts the hosts the health monitor has just seen healthy without probing them, and probes the rest", async () => {
    const redis = new Redis(bench.redis.url);
    try {
      // every host checked once (each has its own moment in the interval)
      const names = [
        ...Array.from({ length: 50 }, (_, i) => `up-${i}`),
        ...Array.from({ length: 10 }, (_, i) => `down-${i}`),
      ];
      await until(
        async () => {
          const checked = await Promise.all(names.map((n) => redis.hget(keys.health(n), "lastCheck")));
          return checked.every((c) => c !== null);
        },
        { timeoutMs: (MONITOR_SECONDS + 20) * 1000, what: "the monitor's first check of every host" },
      );
    } finally {
      redis.disconnect();
    }
    const probes = async (sandbox: string) =>
      (await bench.host(sandbox).sim.calls()).filter((c) => c.cmd === "nvidia-smi").length;
    const [upBefore, downBefore] = [await probes("up-0"), await probes("down-0")];
    const [summary] = await ask("");
    const body = JSON.stringify(summary!.blocks);
    expect(summary!.text, body).toMatch(/^Fleet: 60 hosts, 50 healthy/);
    expect(body).toContain("🟢 healthy *50*");
    for (let i = 0; i < 10; i += 1) expect(body).toContain(`down-${i}`);
    // the healthy ones were not asked again; each down one was, and its line says why it is down
    expect(await probes("up-0")).toBe(upBefore);
    expect(await probes("down-0")).toBe(downBefore + 10);
    expect(body).toMatch(/50 healthy hosts as the health monitor saw them in the last \d+ s; 10 probed now/);
  }, 120_000);

  it("--all: every host's line", async () => {
    const answers = await ask(" --all");
    const body = answers.map((a) => JSON.stringify(a.blocks)).join("\n");
    for (let i = 0; i < 50; i += 1) expect(body).toContain(`up-${i} `);
    for (let i = 0; i < 10; i += 1) expect(body).toContain(`down-${i} `);
  }, 90_000);

  it("an unknown host: the closest one and the count, not sixty names", async () => {
    const command = await bench.slack.command(USERS.alice, "status up-4x", { channel: CHANNEL });
    const text = command.ackResponse?.text ?? "";
    expect(text).toContain("Unknown host `up-4x`. Did you mean up-4?");
    expect(text).toContain("(60 in all; `/llm status` lists them)");
    expect(text.length).toBeLessThan(400);
  });
});
