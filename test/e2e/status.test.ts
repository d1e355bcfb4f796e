import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Bench, CHANNEL, QUICK_BENCH, startBench, USERS } from "../../testbench/bench.ts";
import type { EphemeralMessage, SlackMessage } from "../../testbench/slack/index.ts";
import { until } from "../../testbench/until.ts";

/**
 * The walking skeleton end to end: signed slash commands into the real Bolt app, a real BullMQ job on a
 * real Redis, real SSH into simulated GPU hosts, and the answer in the Slack emulator's channel.
 */
let bench: Bench;

beforeAll(async () => {
  bench = await startBench({
    ...QUICK_BENCH,
    connectTimeoutSeconds: 2,
    hosts: [
      { name: "gpu-1", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } },
      {
        name: "h200",
        gpus: "h200-1gpu",
        serving: { preset: "llama-bf16-small" },
        faults: { sglang: "crash-on-start" },
      },
      { name: "idle", gpus: "8x-b200", serving: false },
      { name: "loading", gpus: "8x-b200", faults: { sglang: "hang" }, waitHealthy: false },
      { name: "stuck-gpu", gpus: "8x-h200", faults: { nvidiaSmi: "hang" }, commandTimeoutSeconds: 2 },
      { name: "box", gpus: "h200-1gpu", transport: "local", serving: { preset: "llama-bf16-small" } },
      { name: "gone", reach: "refused", serving: false },
      { name: "blackhole", reach: "silent", serving: false },
      { name: "rebuilt", reach: "stale-key", serving: false },
    ],
  });
  await bench.startBot();
}, 120_000);

afterAll(async () => {
  await bench?.stop();
});

/** The bot's own ephemerals (not the command's ack) shown to `user` in the channel since `before`. */
function privateAnswers(user: string, before: number): EphemeralMessage[] {
  return bench.slack
    .ephemerals(CHANNEL, user)
    .slice(before)
    .filter((e) => e.source === "api");
}

/** `/llm status <host>` as alice: by default the answer reaches only her, as an ephemeral. */
async function statusOf(host: string): Promise<EphemeralMessage> {
  const before = bench.slack.ephemerals(CHANNEL, USERS.alice).length;
  const command = await bench.slack.command(USERS.alice, `status ${host}`, { channel: CHANNEL });
  expect(command.status).toBe(200);
  expect(command.ackResponse?.text ?? command.body).toContain(`Checking ${host}`);
  return await bench.slack.waitFor(
    () => privateAnswers(USERS.alice, before).find((m) => m.text.includes(`${host}:`)),
    { timeoutMs: 20_000, what: `the status of ${host}` },
  );
}

/** `/llm status <words>` as alice, and the channel message whose text passes `match`. */
async function sharedStatus(words: string, match: (text: string) => boolean): Promise<SlackMessage> {
  const before = bench.slack.messages(CHANNEL).length;
  const command = await bench.slack.command(USERS.alice, `status ${words}`.trim(), { channel: CHANNEL });
  expect(command.ackResponse?.text).toContain("Checking");
  return await bench.slack.waitFor(
    () =>
      bench.slack
        .messages(CHANNEL)
        .slice(before)
        .find((m) => match(m.text)),
    { timeoutMs: 20_000, what: `the shared answer to /llm status ${words}` },
  );
}

describe("who sees the answer", () => {
  it("by default answers only the person who asked: an ephemeral for alice, nothing in the channel", async () => {
    const channelBefore = bench.slack.messages(CHANNEL).length;
    const othersBefore = bench.slack.ephemerals(CHANNEL, USERS.bob).length;
    const answer = await statusOf("gpu-1");
    expect(answer.user).toBe(USERS.alice);
    expect(answer.text).toContain("🟢 gpu-1: healthy");
    expect(JSON.stringify(answer.blocks)).toContain("sglang-gpu-1.service");
    // give a channel post that should not happen the time it would take
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(bench.slack.messages(CHANNEL).slice(channelBefore)).toEqual([]);
    expect(bench.slack.ephemerals(CHANNEL, USERS.bob).length).toBe(othersBefore);
    expect(bench.slack.calls("chat.postEphemeral").at(-1)?.args).toMatchObject({
      channel: CHANNEL,
      user: USERS.alice,
    });
  });

  it("posts it in the channel with --share, typed anywhere and however autocorrect spells it", async () => {
    const ephemeralsBefore = bench.slack.ephemerals(CHANNEL, USERS.alice).length;
    const shared = await sharedStatus("gpu-1 --share", (t) => t.includes("gpu-1:"));
    expect(shared.text).toContain("🟢 gpu-1: healthy");
    const first = await sharedStatus("--share gpu-1", (t) => t.includes("gpu-1:"));
    expect(first.text).toContain("🟢 gpu-1: healthy");
    const dashed = await sharedStatus("gpu-1 \u2014share", (t) => t.includes("gpu-1:"));
    expect(dashed.text).toContain("🟢 gpu-1: healthy");
    expect(privateAnswers(USERS.alice, ephemeralsBefore)).toEqual([]);
  });

  it("the fleet table follows the same rule: private by default, in the channel with --share", async () => {
    const channelBefore = bench.slack.messages(CHANNEL).length;
    const before = bench.slack.ephemerals(CHANNEL, USERS.alice).length;
    const command = await bench.slack.command(USERS.alice, "status", { channel: CHANNEL });
    expect(command.ackResponse?.text).toContain("Checking gpu-1, h200");
    const fleet = await bench.slack.waitFor(
      () => privateAnswers(USERS.alice, before).find((m) => m.text.startsWith("Fleet:")),
      { timeoutMs: 20_000, what: "the private fleet table" },
    );
    expect(fleet.text).toContain("Fleet: 9 hosts");
    expect(bench.slack.messages(CHANNEL).slice(channelBefore)).toEqual([]);
    const shared = await sharedStatus("--share", (t) => t.startsWith("Fleet:"));
    expect(shared.text).toContain("Fleet: 9 hosts");
  });

  it("refuses an unknown option, or --share given twice, with the usage", async () => {
    const unknown = await bench.slack.command(USERS.alice, "status gpu-1 --public", { channel: CHANNEL });
    expect(unknown.ackResponse?.text).toContain("unknown option `--public`");
    expect(unknown.ackResponse?.text).toContain("Usage: `/llm status [host] [--all] [--share]`");
    const twice = await bench.slack.command(USERS.alice, "status --share gpu-1 --share", {
      channel: CHANNEL,
    });
    expect(twice.ackResponse?.text).toContain("Usage: `/llm status [host] [--all] [--share]`");
  });
});

describe("/llm status", () => {
  it("shows a healthy host: model, service, GPUs", async () => {
    const message = await statusOf("gpu-1");
    expect(message.text).toContain("🟢 gpu-1: healthy");
    const body = JSON.stringify(message.blocks);
    expect(body).toContain("Qwen/Qwen3-32B-FP8".split("/")[0]!);
    expect(body).toContain("8× NVIDIA RTX PRO 6000 Blackwell Server Edition (sm 12.0)");
    expect(body).toContain("sglang-gpu-1.service");
    expect(body).toMatch(/active \(running\), up [\d.]+ (?:s|min|h|d)(?: \d+ (?:s|min|h))?/);
    expect(body).toContain("/health_generate OK");
  });

  it("shows a host whose unit has failed, with the journal's last lines", async () => {
    const message = await statusOf("h200");
    expect(message.text).toContain("🔴 h200: service failed");
    const body = JSON.stringify(message.blocks);
    expect(body).toContain("Last log lines of `sglang-h200.service`");
    expect(body).toContain("Traceback (most recent call last)");
    expect(body).toContain("Start request repeated too quickly");
    expect(body).toContain("1× NVIDIA H200 (sm 9.0)");
  });

  it("shows a host with no server on its port as not serving", async () => {
    const message = await statusOf("idle");
    expect(message.text).toContain("🔴 idle: not serving");
    expect(JSON.stringify(message.blocks)).toContain("not installed");
    expect(JSON.stringify(message.blocks)).toContain("connection refused");
  });

  it("shows a unit that is up but still loading its model as starting", async () => {
    const message = await statusOf("loading");
    expect(message.text).toContain("🟡 loading: starting (loading the model)");
  });

  it("still answers when nvidia-smi hangs, and says so", async () => {
    const message = await statusOf("stuck-gpu");
    const body = JSON.stringify(message.blocks);
    expect(message.text).toContain("stuck-gpu: healthy");
    expect(body).toContain("did not finish within 2 s");
    expect(body).toContain("nvidia-smi");
  });

  it("works the same for a local host (bash on the bot's machine)", async () => {
    const message = await statusOf("box");
    expect(message.text).toContain("🟢 box: healthy");
  });

  it("answers for a host that refuses connections at once", async () => {
    const message = await statusOf("gone");
    expect(message.text).toContain("⚫ gone: unreachable");
    expect(JSON.stringify(message.blocks)).toContain("ECONNREFUSED");
  });

  it("answers for a host that never completes the SSH handshake within the configured timeout", async () => {
    const started = Date.now();
    const message = await statusOf("blackhole");
    expect(message.text).toContain("⚫ blackhole: unreachable");
    expect(message.text).toContain("did not complete an SSH handshake within 2 s");
    // the configured connect timeout is 2 s; the answer must not wait much longer than that
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("refuses a host whose key changed, and says which key it saw and how to fix the pin", async () => {
    const message = await statusOf("rebuilt");
    const body = JSON.stringify(message.blocks);
    expect(message.text).toContain("⚫ rebuilt: unreachable");
    expect(body).toContain(bench.sshd.hostKeySha256());
    expect(body).toContain("HOST_KEY_MISMATCH");
    expect(body).toContain("hostKeySha256");
  });

  it("without a host, answers with one table of the whole fleet in its different states", async () => {
    const before = bench.slack.messages(CHANNEL).length;
    const command = await bench.slack.command(USERS.alice, "status --share", { channel: CHANNEL });
    expect(command.ackResponse?.text).toContain("Checking gpu-1, h200");
    const fleet = await bench.slack.waitFor(
      () =>
        bench.slack
          .messages(CHANNEL)
          .slice(before)
          .find((m) => m.text.startsWith("Fleet:")),
      { timeoutMs: 20_000, what: "the fleet table" },
    );
    expect(bench.slack.messages(CHANNEL).slice(before)).toHaveLength(1);
    expect(fleet.text).toContain("Fleet: 9 hosts");
    const table = JSON.stringify(fleet.blocks);
    for (const [host, state] of [
      ["gpu-1", "🟢 healthy"],
      ["h200", "🔴 failed"],
      ["idle", "🔴 down"],
      ["loading", "🟡 starting"],
      ["gone", "⚫ unreachable"],
      ["rebuilt", "⚫ unreachable"],
    ]) {
      expect(table).toMatch(new RegExp(`${host} +${state}`));
    }
  });

  it("never shows a stack trace or a secret in Slack", () => {
    const everything = JSON.stringify([bench.slack.messages(CHANNEL), bench.slack.ephemerals(CHANNEL)]);
    expect(everything).not.toMatch(/\n\s+at .+\(.+:\d+:\d+\)/);
    expect(everything).not.toContain(bench.botToken);
    expect(everything).not.toContain(bench.signingSecret);
  });
});

describe("the Slack door", () => {
  it("rejects a badly signed request and enqueues nothing", async () => {
    const jobsBefore = await bench.queuedJobCount();
    const messagesBefore = bench.slack.messages(CHANNEL).length;
    const forged = await bench.slack.command(USERS.alice, "status gpu-1", {
      channel: CHANNEL,
      signWith: "not-the-secret",
    });
    expect(forged.status).toBe(401);
    const stale = await bench.slack.command(USERS.alice, "status gpu-1", {
      channel: CHANNEL,
      timestamp: Math.floor(Date.now() / 1000) - 600,
    });
    expect(stale.status).toBe(401);
    // a signed command sent after them is queued and answered: by then the bot had handled the two
    // above, and it counted only this one
    const answersBefore = privateAnswers(USERS.alice, 0).length;
    await statusOf("gpu-1");
    expect(await bench.queuedJobCount()).toBe(jobsBefore + 1);
    expect(privateAnswers(USERS.alice, 0).length).toBe(answersBefore + 1);
    expect(bench.slack.messages(CHANNEL).length).toBe(messagesBefore);
  });

  it("refuses a user who is neither requester nor approver, ephemerally, and enqueues nothing", async () => {
    const jobsBefore = await bench.queuedJobCount();
    const command = await bench.slack.command(USERS.mallory, "status gpu-1", { channel: CHANNEL });
    expect(command.status).toBe(200);
    expect(command.ackResponse?.response_type).toBe("ephemeral");
    expect(command.ackResponse?.text).toContain("not allowed");
    expect(await bench.queuedJobCount()).toBe(jobsBefore);
  });

  it("lets a member of a requester user group in", async () => {
    const command = await bench.slack.command(USERS.carol, "status gpu-1", { channel: CHANNEL });
    expect(command.ackResponse?.text).toContain("Checking gpu-1");
  });

  it("answers help and unknown sub-commands with the usage", async () => {
    const help = await bench.slack.command(USERS.mallory, "help", { channel: CHANNEL });
    expect(help.ackResponse?.text).toContain("/llm status [host]");
    const unknown = await bench.slack.command(USERS.alice, "frobnicate $(reboot)", { channel: CHANNEL });
    expect(unknown.ackResponse?.text).toContain("Unknown sub-command");
    expect(unknown.ackResponse?.text).toContain("/llm status [host]");
  });

  it("names the known hosts when asked about an unknown one", async () => {
    const command = await bench.slack.command(USERS.alice, "status gpu-9;reboot", { channel: CHANNEL });
    expect(command.ackResponse?.text).toContain("Unknown host `gpu-9;reboot`");
    expect(command.ackResponse?.text).toContain("gpu-1, h200, idle, loading, stuck-gpu, box");
    const extra = await bench.slack.command(USERS.alice, "status gpu-1 gpu-2", { channel: CHANNEL });
    expect(extra.ackResponse?.text).toContain("name at most one host");
    expect(extra.ackResponse?.text).toContain("Usage: `/llm status [host] [--all] [--share]`");
  });
});

describe("with status.visibility: channel", () => {
  let shared: Bench;

  beforeAll(async () => {
    shared = await startBench({
      ...QUICK_BENCH,
      hosts: [{ name: "gpu-1", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } }],
      status: { visibility: "channel" },
    });
    await shared.startBot();
  }, 120_000);

  afterAll(async () => {
    await shared?.stop();
  });

  it("posts every answer in the channel, with or without --share, and nothing privately", async () => {
    for (const words of ["status gpu-1", "status", "status gpu-1 --share"]) {
      const before = shared.slack.messages(CHANNEL).length;
      const command = await shared.slack.command(USERS.alice, words, { channel: CHANNEL });
      expect(command.ackResponse?.text).toContain("Checking gpu-1");
      expect(command.ackResponse?.text).not.toContain("Only you");
      const answer = await shared.slack.waitFor(
        () =>
          shared.slack
            .messages(CHANNEL)
            .slice(before)
            .find((m) => m.text.includes("gpu-1") || m.text.startsWith("Fleet:")),
        { timeoutMs: 20_000, what: `the answer to ${words} in the channel` },
      );
      expect(answer.text).toMatch(words === "status" ? /^Fleet: 1 host/ : /🟢 gpu-1: healthy/);
    }
    expect(shared.slack.ephemerals(CHANNEL, USERS.alice).filter((e) => e.source === "api")).toEqual([]);
    expect(shared.slack.calls("chat.postEphemeral")).toEqual([]);
  });
});

describe("when Redis is down", () => {
  it("answers at once that the queue is unavailable instead of hanging past Slack's deadline, then recovers", async () => {
    await bench.redis.stop();
    try {
      const command = await bench.slack.command(USERS.alice, "status gpu-1", { channel: CHANNEL });
      expect(command.timedOut).toBe(false);
      expect(command.ackResponse?.text).toContain("job queue is unavailable");
      expect(command.ackResponse?.text).toContain("QUEUE_UNAVAILABLE");
      expect(command.ackResponse?.text).toContain("Redis is down or unreachable");
    } finally {
      await bench.redis.start();
    }
    await until(
      async () => {
        const again = await bench.slack.command(USERS.alice, "status gpu-1", { channel: CHANNEL });
        return again.ackResponse?.text?.includes("Checking gpu-1") === true;
      },
      { what: "a status command queued again once Redis is back", timeoutMs: 20_000, intervalMs: 300 },
    );
  });
});
