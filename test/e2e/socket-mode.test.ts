import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/load-config.ts";
import { CodedError } from "../../src/errors.ts";
import { createLogger } from "../../src/log.ts";
import { startModelswap } from "../../src/main.ts";
import { type Bench, CHANNEL, QUICK_BENCH, startBench, USERS } from "../../testbench/bench.ts";
import { freePort } from "../../testbench/free-port.ts";
import { makeModel } from "../../testbench/hub/index.ts";
import { modelswapBin } from "../../testbench/modelswap-bin.ts";
import { newAppToken, type SlackMessage } from "../../testbench/slack/index.ts";
import { SwapDriver } from "../../testbench/swap-driver.ts";

/**
 * The bot in Socket Mode (SLACK_APP_TOKEN, no signing secret, no Request URL): it opens its own
 * WebSocket to the Slack emulator, and every command, reaction and click arrives as an envelope it acks.
 * A whole swap, a status, and Slack refreshing and cutting the connection in the middle of a swap.
 */
const MODEL = "sim-org/open-llama-1B";
const OTHER = "sim-org/open-llama-1B-chat";
let bench: Bench;
let swaps: SwapDriver;
let port: number | undefined;

beforeAll(async () => {
  bench = await startBench({
    ...QUICK_BENCH,
    socketMode: true,
    swaps: { pollSeconds: 0.3, cardUpdateSeconds: 1 },
    hosts: ["sock-1", "sock-2"].map((name) => ({
      name,
      gpus: "8x-rtx-pro-6000-blackwell" as const,
      serving: { preset: "qwen3-fp8-dense" as const },
    })),
  });
  // apps.connections.open is a tier 1 method: this file connects three times within a minute
  bench.hub.addModel(makeModel("llama-bf16-small", { id: MODEL, gated: false }));
  bench.hub.addModel(makeModel("llama-bf16-small", { id: OTHER, gated: false }));
  port = (await bench.startBot()).port;
  swaps = new SwapDriver(bench);
}, 120_000);

afterAll(async () => {
  await swaps?.close();
  await bench?.stop();
});

/** `/llm status <host> --share`: the ack, then the status message in the channel. */
async function statusOf(host: string): Promise<SlackMessage> {
  const before = bench.slack.messages(CHANNEL).length;
  const command = await bench.slack.command(USERS.alice, `status ${host} --share`, { channel: CHANNEL });
  expect(command.status).toBe(200);
  expect(command.ackResponse?.text).toContain(`Checking ${host}`);
  return await bench.slack.waitFor(
    () =>
      bench.slack
        .messages(CHANNEL)
        .slice(before)
        .find((m) => m.text.includes(`${host}:`)),
    { timeoutMs: 20_000, what: `the status of ${host}` },
  );
}

describe("Socket Mode", () => {
  it("a swap end to end: request, plan, ✅, Swapped; then status shows the new model", async () => {
    expect(bench.env.SLACK_SIGNING_SECRET).toBeUndefined();
    expect(bench.slack.transport).toBe("socket");
    expect(bench.slack.socketConnections()).toMatchObject([{ id: 1, open: true }]);

    const card = await swaps.request(MODEL, "sock-1");
    await swaps.approve(card.ts);
    // a whole swap: on two loaded cores it has taken more than a minute (the suite of 2026-12-06, load 10)
    const done = await swaps.outcome(card.ts, /Swapped/, 150_000);
    expect(done.text).toContain(MODEL);
    // the outcome, broadcast to the channel, is the last thing a swap posts
    expect((await swaps.finalLine(card.ts)).text).toContain(`sock-1 now serves ${MODEL}`);

    const status = await statusOf("sock-1");
    expect(status.text).toContain("healthy");
    expect(JSON.stringify(status.blocks)).toContain("open-llama-1B");

    // everything came as envelopes on the one connection, and the bot acked each in time
    const envelopes = bench.slack.socketEnvelopes();
    expect(envelopes.map((e) => e.type)).toEqual(["slash_commands", "events_api", "slash_commands"]);
    expect(envelopes.every((e) => e.ackedAt !== undefined && e.late !== true && e.connection === 1)).toBe(
      true,
    );
    // no Request URL, but /healthz still answers on PORT (for probes)
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(200);
  }, 180_000);

  it("Slack refreshes the connection while a swap waits and cuts it while it runs: the bot reconnects each time and the swap finishes", async () => {
    const card = await swaps.request(OTHER, "sock-2");
    const swapId = swaps.swapId(card.ts);
    const plan = await swaps.plan(card.ts);

    // a routine refresh while the plan waits for approval
    const first = bench.slack.socketConnections().at(-1)!;
    expect(bench.slack.disconnectSocket("refresh_requested")).toBe(1);
    const [second] = await bench.slack.waitForSocket({ after: first.id });
    expect(bench.slack.socketConnections().find((c) => c.id === first.id)).toMatchObject({
      open: false,
      closedBy: "app",
      disconnects: ["refresh_requested"],
    });

    // the Approve click arrives over the new connection
    const click = await bench.slack.clickButton(USERS.bob, CHANNEL, plan.ts, "swap_approve");
    expect(click.status).toBe(200);
    expect(bench.slack.socketEnvelopes().at(-1)).toMatchObject({
      type: "interactive",
      connection: second!.id,
    });

    // the connection drops without a word while the new model is being switched in
    await swaps.untilRecord(swapId, (r) => ["switch", "health", "sanity", "benchmark"].includes(r.step), {
      what: "the switch",
    });
    expect(bench.slack.dropSockets()).toBe(1);
    await bench.slack.waitForSocket({ after: second!.id });

    // a whole swap: on two loaded cores it has taken more than a minute (the suite of 2026-12-06, load 10)
    const done = await swaps.outcome(card.ts, /Swapped/, 150_000);
    expect(done.text).toContain(OTHER);
    // the swap was unaffected: one card, one plan, one switch
    expect(swaps.cardsOf(swapId)).toHaveLength(1);
    expect(swaps.plansOf(card.ts)).toHaveLength(1);
    // and the bot answers on its third connection
    expect((await statusOf("sock-2")).text).toContain("healthy");
    expect(bench.slack.socketEnvelopes().at(-1)?.connection).toBe(3);
    expect(bench.slack.calls("apps.connections.open").filter((c) => c.ok)).toHaveLength(3);
  }, 180_000);

  it("a wrong app-level token stops `modelswap start` with a fix-it message and exit code 1", async () => {
    // the real CLI (the bench's environment, another app's token): what an operator or a supervisor sees
    const child = spawn(process.execPath, [modelswapBin().path, "start"], {
      env: {
        ...process.env,
        ...modelswapBin().env,
        ...bench.env,
        SLACK_APP_TOKEN: newAppToken("A0OTHERAPP"),
        PORT: String(await freePort()),
        LOG_LEVEL: "silent",
      },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    // was: the message, then a process that kept running (its worker and Redis connections held it)
    const code = await Promise.race([
      new Promise<number | null>((resolve) => child.once("exit", resolve)),
      // generous: a loaded 2-core machine takes seconds just to load the CLI; a hung process never exits
      new Promise<string>((resolve) => setTimeout(() => resolve("still running after 45 s"), 45_000)),
    ]);
    if (child.exitCode === null) child.kill("SIGKILL");
    expect(code).toBe(1);
    expect(stderr).toContain(
      "Slack refused to open a Socket Mode connection with SLACK_APP_TOKEN (invalid_auth)",
    );
    expect(stderr).toContain("connections:write");
    expect(bench.slack.calls("apps.connections.open").at(-1)).toMatchObject({
      ok: false,
      error: "invalid_auth",
    });
  }, 60_000);

  it("a taken PORT stops the start with a fix-it error (was: an uncaught EADDRINUSE, a crash)", async () => {
    const taken = await loadConfig({ ...bench.env, PORT: String(port) });
    const connections = bench.slack.socketConnections().length;
    const busy = await startModelswap({
      config: taken,
      roles: { bot: true, worker: false },
      log: createLogger({ level: "silent" }),
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(busy).toBeInstanceOf(CodedError);
    expect(busy).toMatchObject({ code: "CONFIG_INVALID", message: expect.stringContaining(`PORT ${port}`) });
    // it never connected to Slack
    expect(bench.slack.socketConnections()).toHaveLength(connections);
  });
});
