import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdir, readFile, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Bench, CHANNEL, type ChildBot, QUICK_BENCH, startBench, USERS } from "../../testbench/bench.ts";
import { makeModel } from "../../testbench/hub/index.ts";
import { modelswapBin } from "../../testbench/modelswap-bin.ts";
import type { SlackMessage } from "../../testbench/slack/index.ts";
import { SwapDriver } from "../../testbench/swap-driver.ts";
import { dumpRedis } from "../support/redis-dump.ts";

/**
 * A canary string hidden in every secret the bot holds — the Slack bot token, the signing secret, the
 * HF token and the directory of the SSH keys — then a successful swap of a gated model (the HF token at
 * work on the bot and on the host), a swap that fails and rolls back, a host whose key is gone, a host
 * that refuses connections, `/llm status` and `/llm history`, with both engines (SGLang's swaps, and a
 * host swapped to vLLM, whose engine build runs pip on the host), all through the real `modelswap start`
 * process. Afterwards the canary must be nowhere a person or another program could read it: Slack, the
 * bot's log, Redis (job data, swap records, the audit stream) and the hosts (their command lines and files).
 */
const CANARY = `CANARY${randomBytes(8).toString("hex")}`;
const SECRETS = {
  botToken: `xoxb-${CANARY}-bench`,
  signingSecret: `${CANARY}s1gn1ngs3cr3t`,
  hfToken: `hf_${CANARY}`,
  keyDir: `ssh-keys-${CANARY}`,
};
const GATED = "meta-llama/Llama-Gated-1B";
const run = promisify(execFile);
let bench: Bench;
let bot: ChildBot;
let swaps: SwapDriver;

beforeAll(async () => {
  bench = await startBench({
    ...QUICK_BENCH,
    secrets: SECRETS,
    swaps: { pollSeconds: 0.2, cardUpdateSeconds: 1, healthTimeoutSeconds: 8 },
    hosts: [
      { name: "gpu-ok", serving: { preset: "qwen3-fp8-dense" } },
      { name: "gpu-nan", serving: { preset: "qwen3-fp8-dense" } },
      { name: "gpu-vllm", serving: { preset: "qwen3-fp8-dense" }, vllm: "only" },
      { name: "gpu-nokey", serving: false },
      { name: "gpu-gone", reach: "refused", serving: false },
    ],
  });
  bench.hub.addModel(
    makeModel("llama-bf16-small", { id: GATED, gated: "manual", approvedTokens: [SECRETS.hfToken] }),
  );
  await bench.host("gpu-nan").sim.setFault("sglang", { models: { "Llama-Gated": { mode: "nan" } } });
  bot = await bench.spawnBot();
  swaps = new SwapDriver(bench);
}, 120_000);

afterAll(async () => {
  await swaps?.close();
  await bench?.stop();
});

/** A channel message posted after `since` whose text matches. */
async function posted(pattern: RegExp, since: number, what: string): Promise<SlackMessage> {
  return await bench.slack.waitFor(
    () =>
      bench.slack
        .messages(CHANNEL)
        .slice(since)
        .find((m) => pattern.test(m.text) || pattern.test(JSON.stringify(m.blocks))),
    { timeoutMs: 30_000, what },
  );
}

/** Everything the Slack side holds: every Web API call's arguments, messages with their edits, ephemerals, response_url posts. */
function slackEverything(): string {
  const ws = bench.slack.workspace;
  return JSON.stringify({
    calls: ws.calls,
    messages: ws.knownChannels().map((c) => ws.allMessages(c.id)),
    deleted: ws.deleted,
    ephemerals: ws.ephemerals,
    responses: bench.slack.responses(),
    uploads: [...ws.uploads.values()],
    files: bench.slack.files(),
  });
}

/** Every regular file under a directory (the host's whole sandbox), with its text. */
async function filesUnder(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    const info = await stat(path).catch(() => undefined);
    if (info === undefined || info.size > 64 * 1024 * 1024) continue;
    out.set(path, (await readFile(path).catch(() => Buffer.alloc(0))).toString("latin1"));
  }
  return out;
}

function withCanary(entries: Iterable<[string, string]>): string[] {
  return [...entries].filter(([, text]) => text.includes(CANARY)).map(([where]) => where);
}

describe("secrets, with a canary inside each", () => {
  it("are used, and never reach Slack, the log, Redis or a host's command lines and files", async () => {
    const config = await bench.config();
    const keyIndex = config.file.hosts.findIndex((h) => h.name === "gpu-nokey");
    const keyPath = config.file.hosts[keyIndex]?.ssh?.privateKeyPath ?? "";
    expect(keyPath).toContain(CANARY);

    // a key that is gone after start: the next connection to that host has to read it, and cannot
    await rm(keyPath);
    await bench.sshd.dropConnections();
    const check = await run(process.execPath, [modelswapBin().path, "config", "check"], {
      env: { ...process.env, ...modelswapBin().env, ...bench.env },
    }).catch((error: { stdout: string; stderr: string; code: number }) => error);
    expect("code" in check ? check.code : 0).not.toBe(0);
    const checkText = `${check.stdout}\n${check.stderr}`;
    expect(checkText).toContain(`hosts[${keyIndex}].ssh.privateKeyPath`);

    const ok = await swaps.request(GATED, "gpu-ok");
    const nan = await swaps.request(GATED, "gpu-nan");
    const vllm = await swaps.request(GATED, "gpu-vllm");
    await Promise.all([ok, nan, vllm].map((card) => swaps.approve(card.ts)));
    const noKey = await swaps.request(GATED, "gpu-nokey");
    await swaps.outcome(ok.ts, /Swapped/, 60_000);
    await swaps.outcome(nan.ts, /Rolled back/, 60_000);
    await swaps.outcome(vllm.ts, /Swapped/, 60_000);
    const noKeyCard = await swaps.outcome(noKey.ts, /Failed/, 60_000);
    expect(JSON.stringify(noKeyCard.blocks)).toContain(
      `cannot read the SSH key of gpu-nokey (hosts[${keyIndex}].ssh.privateKeyPath): the file does not exist`,
    );

    let since = bench.slack.messages(CHANNEL).length;
    await bench.slack.command(USERS.alice, "status --share", { channel: CHANNEL });
    const fleet = await posted(/gpu-gone/, since, "the fleet table");
    expect(JSON.stringify(fleet)).toMatch(/gpu-nokey/);
    since = bench.slack.messages(CHANNEL).length;
    await bench.slack.command(USERS.alice, "status gpu-nokey --share", { channel: CHANNEL });
    await posted(/gpu-nokey/, since, "the status of gpu-nokey");
    since = bench.slack.messages(CHANNEL).length;
    await bench.slack.command(USERS.alice, "status gpu-gone --share", { channel: CHANNEL });
    await posted(/gpu-gone/, since, "the status of gpu-gone");
    since = bench.slack.messages(CHANNEL).length;
    await bench.slack.command(USERS.alice, "history", { channel: CHANNEL });
    await posted(/Llama-Gated/, since, "the history");
    await bot.kill("SIGTERM");

    // the secrets were really used, so their absence below means something
    const hubAuth = bench.hub.requests().filter((r) => r.token === SECRETS.hfToken && r.tokenValid);
    expect(hubAuth.some((r) => r.kind === "api")).toBe(true); // the bot resolving the gated model
    expect(hubAuth.some((r) => r.kind === "resolve" && r.method === "GET" && r.status === 200)).toBe(true); // hf on the host
    expect(bench.slack.calls("chat.postMessage").filter((c) => c.ok).length).toBeGreaterThan(5); // the bot token
    expect(bench.slack.userActions().length).toBeGreaterThan(0); // signed commands the bot accepted
    expect(await bench.host("gpu-ok").sim.calls()).not.toHaveLength(0); // through the key in the canary's directory

    const leaks: string[] = [];
    if (slackEverything().includes(CANARY)) leaks.push("Slack");
    if (checkText.includes(CANARY)) leaks.push("modelswap config check");
    const logs = (await readdir(bench.dir)).filter((f) => /^bot.*\.log$/.test(f));
    expect(logs.length).toBeGreaterThan(0);
    for (const log of logs) {
      const text = await readFile(join(bench.dir, log), "utf8");
      expect(text.length).toBeGreaterThan(1000);
      for (const line of text.split("\n")) if (line.includes(CANARY)) leaks.push(`${log}: ${line}`);
    }
    const redis = await dumpRedis(bench.redis.url);
    expect([...redis.keys()].filter((k) => k.endsWith(":audit"))).toHaveLength(1); // the audit stream was read
    leaks.push(...withCanary(redis).map((key) => `redis ${key}`));
    // HF_TOKEN reaches hf through its environment (a file the task reads and deletes), never its arguments
    const downloads = (await bench.host("gpu-ok").sim.calls()).filter((c) => c.cmd === "hf");
    expect(downloads.length).toBeGreaterThan(0);
    expect(JSON.stringify(downloads)).not.toMatch(/--token|hf_/);
    // nor into vLLM's build (pip on the host) or its units
    const vllmCalls = await bench.host("gpu-vllm").sim.calls();
    expect(vllmCalls.filter((c) => c.cmd === "pip").length).toBeGreaterThan(0);
    for (const name of ["gpu-ok", "gpu-nan", "gpu-vllm", "gpu-nokey", "gpu-gone"]) {
      leaks.push(
        ...withCanary(await filesUnder(bench.host(name).sim.root)).map((path) => `host file ${path}`),
      );
    }
    expect(leaks).toEqual([]);
  }, 150_000);
});
