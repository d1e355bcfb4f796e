import { App, LogLevel, SocketModeReceiver } from "@slack/bolt";
import type { Block, KnownBlock } from "@slack/types";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import {
  type JsonObject,
  newAppToken,
  type SlackEmulator,
  startSlackEmulator,
} from "../../testbench/slack/index.ts";
import { until } from "../../testbench/until.ts";

/**
 * The Slack emulator's Socket Mode: apps.connections.open with the app-level token, single-use
 * WebSocket URLs, `hello`, envelopes and acks, retries of unacked events, `disconnect`. Driven by a
 * real Bolt app with its SocketModeReceiver (what the bot runs) and, where a misbehaving app is needed,
 * by a bare WebSocket client.
 */
const BOT_TOKEN = "xoxb-test-socket-mode";
const APP_TOKEN = newAppToken("A0MODELSWP");
const CHANNEL = "C0LLMOPS01";
const ALICE = "U0ALICE001";
const BOB = "U0BOB00001";

const users = [
  { id: ALICE, name: "alice" },
  { id: BOB, name: "bob" },
];
const channels = [{ id: CHANNEL, name: "llm-ops" }];

async function api(
  slack: SlackEmulator,
  method: string,
  token: string | undefined,
  form: Record<string, string> = {},
): Promise<JsonObject> {
  const res = await fetch(`${slack.apiUrl}${method}`, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    },
    body: new URLSearchParams(form).toString(),
  });
  return (await res.json()) as JsonObject;
}

/** A bare client: connects to a URL and keeps every message; acks only when told to. */
class RawClient {
  readonly messages: JsonObject[] = [];
  private constructor(readonly ws: WebSocket) {
    ws.on("message", (data) => this.messages.push(JSON.parse(data.toString()) as JsonObject));
  }

  static async connect(url: string): Promise<RawClient> {
    const ws = new WebSocket(url);
    const client = new RawClient(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
      ws.once("unexpected-response", (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    });
    return client;
  }

  async next(type: string, after = 0): Promise<JsonObject> {
    return await until(() => this.messages.slice(after).find((m) => m.type === type), {
      what: `a ${type} message`,
      timeoutMs: 2000,
      intervalMs: 10,
    });
  }

  ack(envelopeId: unknown, payload?: JsonObject): void {
    this.ws.send(JSON.stringify({ envelope_id: envelopeId, ...(payload === undefined ? {} : { payload }) }));
  }

  close(): void {
    this.ws.terminate();
  }
}

describe("apps.connections.open", () => {
  let slack: SlackEmulator;
  beforeAll(async () => {
    slack = await startSlackEmulator({
      botToken: BOT_TOKEN,
      signingSecret: "x",
      appToken: APP_TOKEN,
      rateLimits: { scale: 100 },
    });
  });
  afterAll(async () => {
    await slack.stop();
  });

  it("takes only the app-level token, and the app-level token takes nothing else", async () => {
    const opened = await api(slack, "apps.connections.open", APP_TOKEN);
    expect(opened.ok).toBe(true);
    expect(opened.url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/link\/\?ticket=[0-9a-f-]{36}&app_id=A0MODELSWP$/);
    expect(await api(slack, "apps.connections.open", BOT_TOKEN)).toEqual({
      ok: false,
      error: "not_allowed_token_type",
    });
    expect(await api(slack, "apps.connections.open", "xapp-1-A0OTHER-1-abc")).toEqual({
      ok: false,
      error: "invalid_auth",
    });
    expect(await api(slack, "apps.connections.open", undefined)).toEqual({ ok: false, error: "not_authed" });
    expect(await api(slack, "chat.postMessage", APP_TOKEN, { channel: CHANNEL, text: "hi" })).toEqual({
      ok: false,
      error: "not_allowed_token_type",
    });
    expect(slack.calls("apps.connections.open").map((c) => c.error ?? "ok")).toEqual([
      "ok",
      "not_allowed_token_type",
      "invalid_auth",
      "not_authed",
    ]);
  });

  it("hands out a URL that opens one connection, which Slack greets with hello", async () => {
    const { url } = (await api(slack, "apps.connections.open", APP_TOKEN)) as { url: string };
    const client = await RawClient.connect(url);
    const hello = await client.next("hello");
    expect(hello).toEqual({
      type: "hello",
      num_connections: 1,
      debug_info: {
        host: expect.stringMatching(/^applink-/),
        started: expect.any(String),
        build_number: expect.any(Number),
        approximate_connection_time: expect.any(Number),
      },
      connection_info: { app_id: "A0MODELSWP" },
    });
    // the same ticket again, or one never issued: refused before the WebSocket handshake
    await expect(RawClient.connect(url)).rejects.toThrow("HTTP 401");
    await expect(RawClient.connect(url.replace(/ticket=[^&]+/, "ticket=made-up"))).rejects.toThrow(
      "HTTP 401",
    );
    const second = await RawClient.connect(
      ((await api(slack, "apps.connections.open", APP_TOKEN)) as { url: string }).url,
    );
    expect((await second.next("hello")).num_connections).toBe(2);
    client.close();
    second.close();
    await slack.waitFor(() => slack.socketConnections().every((c) => !c.open), { what: "both closed" });
  });
});

describe("envelopes and acks with a bare client", () => {
  let slack: SlackEmulator;
  let client: RawClient;
  beforeAll(async () => {
    slack = await startSlackEmulator({
      botToken: BOT_TOKEN,
      signingSecret: "x",
      appToken: APP_TOKEN,
      users,
      channels,
      ackDeadlineMs: 300,
    });
    const { url } = (await api(slack, "apps.connections.open", APP_TOKEN)) as { url: string };
    client = await RawClient.connect(url);
    await client.next("hello");
  });
  afterAll(async () => {
    client?.close();
    await slack.stop();
  });

  it("a slash command is a slash_commands envelope; its ack payload is the answer the user sees", async () => {
    const from = client.messages.length;
    const pending = slack.command(ALICE, "status gpu-1", { channel: CHANNEL });
    const envelope = await client.next("slash_commands", from);
    expect(envelope).toEqual({
      envelope_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      payload: expect.objectContaining({
        team_id: "T0TESTTEAM",
        channel_id: CHANNEL,
        user_id: ALICE,
        command: "/llm",
        text: "status gpu-1",
        response_url: expect.stringContaining("/response/"),
        trigger_id: expect.any(String),
      }),
      type: "slash_commands",
      accepts_response_payload: true,
    });
    client.ack(envelope.envelope_id, { response_type: "ephemeral", text: "Checking gpu-1…" });
    const result = await pending;
    expect(result.status).toBe(200);
    expect(result.envelopeId).toBe(envelope.envelope_id);
    expect(result.ackResponse).toEqual({ response_type: "ephemeral", text: "Checking gpu-1…" });
    expect(slack.ephemerals(CHANNEL, ALICE).at(-1)).toMatchObject({
      from: "bot",
      text: "Checking gpu-1…",
      source: "ack",
    });
  });

  it("a command nobody acks within the deadline shows Slack's operation_timeout; the late ack is noted", async () => {
    const from = client.messages.length;
    const result = await slack.command(ALICE, "swap x", { channel: CHANNEL });
    expect(result).toMatchObject({ status: 0, timedOut: true });
    expect(slack.ephemerals(CHANNEL, ALICE).at(-1)).toMatchObject({
      from: "slackbot",
      text: '/llm failed with the error "operation_timeout"',
    });
    const envelope = await client.next("slash_commands", from);
    client.ack(envelope.envelope_id, { text: "too late" });
    await slack.waitFor(
      () => slack.socketEnvelopes().find((e) => e.envelope_id === envelope.envelope_id)?.late,
      {
        what: "the late ack",
      },
    );
  });

  it("an unacked event comes again with retry_attempt 1..3 and retry_reason timeout, same event_id", async () => {
    const from = client.messages.length;
    const results = await slack.eventWithRetries({
      type: "app_mention",
      user: ALICE,
      text: "hi",
      channel: CHANNEL,
    });
    expect(results.map((r) => r.timedOut)).toEqual([true, true, true, true]);
    const envelopes = client.messages.slice(from).filter((m) => m.type === "events_api");
    expect(envelopes.map((e) => [e.retry_attempt, e.retry_reason, e.accepts_response_payload])).toEqual([
      [0, "", false],
      [1, "timeout", false],
      [2, "timeout", false],
      [3, "timeout", false],
    ]);
    const payloads = envelopes.map((e) => e.payload as JsonObject);
    expect(new Set(payloads.map((p) => p.event_id)).size).toBe(1);
    expect(payloads[0]).toMatchObject({ type: "event_callback", event: { type: "app_mention", text: "hi" } });
    expect(new Set(envelopes.map((e) => e.envelope_id)).size).toBe(4);
  });

  it("an acked event is not retried", async () => {
    const from = client.messages.length;
    const pending = slack.eventWithRetries({
      type: "app_mention",
      user: ALICE,
      text: "hi",
      channel: CHANNEL,
    });
    client.ack((await client.next("events_api", from)).envelope_id);
    expect((await pending).map((r) => r.status)).toEqual([200]);
  });

  it("nothing is delivered without an open connection: a command fails with dispatch_failed", async () => {
    client.close();
    await slack.waitFor(() => slack.socketConnections().every((c) => !c.open), { what: "closed" });
    const result = await slack.command(ALICE, "status", { channel: CHANNEL });
    expect(result).toMatchObject({ status: 0, networkError: "no open Socket Mode connection" });
    expect(slack.ephemerals(CHANNEL, ALICE).at(-1)?.text).toBe(
      '/llm failed with the error "dispatch_failed"',
    );
    await expect(slack.command(ALICE, "status", { signWith: "forged" })).rejects.toThrow(/not signed/);
  });
});

describe("a Bolt app on Socket Mode", () => {
  let slack: SlackEmulator;
  let app: App;
  const seen: { reactions: JsonObject[]; clicks: JsonObject[]; commands: JsonObject[] } = {
    reactions: [],
    clicks: [],
    commands: [],
  };

  beforeAll(async () => {
    slack = await startSlackEmulator({
      botToken: BOT_TOKEN,
      signingSecret: "x",
      appToken: APP_TOKEN,
      users,
      channels,
      rateLimits: { scale: 100 }, // apps.connections.open is tier 1: this file reconnects several times
    });
    app = new App({
      token: BOT_TOKEN,
      receiver: new SocketModeReceiver({
        appToken: APP_TOKEN,
        logLevel: LogLevel.ERROR,
        // the SDK waits clientPingTimeout before it reconnects (5 s by default)
        clientPingTimeout: 300,
        installerOptions: { clientOptions: { slackApiUrl: slack.apiUrl } },
      }),
      logLevel: LogLevel.ERROR,
      clientOptions: { slackApiUrl: slack.apiUrl },
    });
    app.command("/llm", async ({ command, ack, respond }) => {
      seen.commands.push(command as unknown as JsonObject);
      await ack({ response_type: "ephemeral", text: `Queued: ${command.text}` });
      if (command.text.startsWith("swap "))
        await respond({
          response_type: "in_channel",
          text: `Plan for ${command.text}`,
          blocks: planBlocks(),
        });
    });
    app.event("reaction_added", async ({ event }) => {
      seen.reactions.push(event as unknown as JsonObject);
    });
    app.action("swap_approve", async ({ ack, body, respond }) => {
      await ack();
      seen.clicks.push(body as unknown as JsonObject);
      await respond({ replace_original: true, text: "Approved" });
    });
    await app.start();
  });
  afterAll(async () => {
    await app?.stop();
    await slack?.stop();
  });
  afterEach(() => {
    seen.reactions.length = 0;
  });

  function planBlocks(): (Block | KnownBlock)[] {
    return [
      { type: "section", text: { type: "mrkdwn", text: "Plan" } },
      {
        type: "actions",
        elements: [
          {
            type: "button",
            action_id: "swap_approve",
            text: { type: "plain_text", text: "Approve" },
            value: "sw-1",
          },
        ],
      },
    ];
  }

  it("connects once at start: apps.connections.open, then hello", () => {
    expect(slack.calls("apps.connections.open")).toHaveLength(1);
    expect(slack.socketConnections()).toMatchObject([{ id: 1, open: true, helloAt: expect.any(Number) }]);
    expect(slack.transport).toBe("socket");
  });

  it("a command, a reaction and a click travel as envelopes and come back as acks", async () => {
    const cmd = await slack.command(ALICE, "swap org/model", { channel: CHANNEL });
    expect(cmd.status).toBe(200);
    expect(cmd.ackResponse?.text).toBe("Queued: swap org/model");
    const plan = await slack.waitFor(
      () => slack.messages(CHANNEL).find((m) => m.text.startsWith("Plan for")),
      {
        what: "the plan posted through response_url",
      },
    );
    const reaction = await slack.react(BOB, CHANNEL, plan.ts, "white_check_mark");
    expect(reaction.status).toBe(200);
    await slack.waitFor(() => seen.reactions.length === 1, { what: "the reaction at the app" });
    expect(seen.reactions[0]).toMatchObject({ reaction: "white_check_mark", user: BOB });
    const click = await slack.clickButton(BOB, CHANNEL, plan.ts, "swap_approve");
    expect(click.status).toBe(200);
    await slack.waitFor(() => slack.message(CHANNEL, plan.ts)?.text === "Approved", { what: "the edit" });
    expect(seen.clicks[0]).toMatchObject({ type: "block_actions", actions: [{ action_id: "swap_approve" }] });
    expect(slack.socketEnvelopes().map((e) => [e.type, e.ackedAt !== undefined])).toEqual([
      ["slash_commands", true],
      ["events_api", true],
      ["interactive", true],
    ]);
    // the command's ack carried the answer; the event's and the click's carried nothing
    expect(slack.socketEnvelopes().map((e) => Object.keys(e.ackPayload ?? {}).length > 0)).toEqual([
      true,
      false,
      false,
    ]);
  });

  it.each(["refresh_requested", "link_disabled"] as const)(
    "on disconnect (%s) the app closes the connection and opens a new one",
    async (reason) => {
      const before = slack.socketConnections().at(-1)!;
      const opens = slack.calls("apps.connections.open").length;
      expect(slack.disconnectSocket(reason)).toBe(1);
      const [fresh] = await slack.waitForSocket({ after: before.id });
      expect(slack.socketConnections().find((c) => c.id === before.id)).toMatchObject({
        open: false,
        closedBy: "app",
        disconnects: [reason],
      });
      expect(slack.calls("apps.connections.open")).toHaveLength(opens + 1);
      const cmd = await slack.command(ALICE, `status after ${reason}`, { channel: CHANNEL });
      expect(cmd.status).toBe(200);
      expect(slack.socketEnvelopes().at(-1)?.connection).toBe(fresh?.id);
    },
  );

  it("after a dropped connection (no close frame) the app connects again", async () => {
    const before = slack.socketConnections().at(-1)!;
    expect(slack.dropSockets()).toBe(1);
    await slack.waitForSocket({ after: before.id });
    expect((await slack.command(ALICE, "status after a drop", { channel: CHANNEL })).status).toBe(200);
  });
});
