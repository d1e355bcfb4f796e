import { App, LogLevel } from "@slack/bolt";
import { WebClient } from "@slack/web-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { svgToPng } from "../../src/reporter/chart/svg-to-png.ts";
import { manifestBotScopes } from "../../src/slack/manifest-scopes.ts";
import { freePort } from "../../testbench/free-port.ts";
import {
  type JsonObject,
  renderConversation,
  type SlackEmulator,
  signSlackRequest,
  startSlackEmulator,
} from "../../testbench/slack/index.ts";

const BOT_TOKEN = "xoxb-test-modelswap";
const SECRET = "8f742231b10e8888abcd99yyyzzz85a5";
const CHANNEL = "C0LLMOPS01";
const ALICE = "U0ALICE001";
const BOB = "U0BOB00001";
const OUTAGE = "C0OUTAGE01";

interface Seen {
  commands: JsonObject[];
  reactions: JsonObject[];
  mentions: { event: JsonObject; retryNum: number | undefined; retryReason: string | undefined }[];
  actions: { action: JsonObject; body: JsonObject }[];
}

let slack: SlackEmulator;
let app: App;
let botUrl: string;
const seen: Seen = { commands: [], reactions: [], mentions: [], actions: [] };

async function rawApi(
  method: string,
  form: Record<string, string>,
  headers: Record<string, string> = { authorization: `Bearer ${BOT_TOKEN}` },
): Promise<{ status: number; retryAfter: string | null; body: JsonObject }> {
  const res = await fetch(`${slack.apiUrl}${method}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(form).toString(),
  });
  return {
    status: res.status,
    retryAfter: res.headers.get("retry-after"),
    body: (await res.json()) as JsonObject,
  };
}

beforeAll(async () => {
  slack = await startSlackEmulator({
    botToken: BOT_TOKEN,
    signingSecret: SECRET,
    users: [
      { id: ALICE, name: "alice", realName: "Alice Operator", tz: "Europe/Berlin" },
      { id: BOB, name: "bob" },
    ],
    userGroups: [{ id: "S0APPROVERS", handle: "llm-approvers", users: [BOB] }],
    channels: [
      { id: CHANNEL, name: "llm-ops" },
      { id: "C0BURST001", name: "burst" },
      { id: "C0OTHER001", name: "other" },
      { id: "C0RENDER01", name: "render-demo" },
      { id: OUTAGE, name: "outage" },
      { id: "C0DELETE01", name: "deleted-card" },
      { id: "C0DELETE02", name: "deleted-parent" },
      { id: "C0DELETE03", name: "deleted-thread" },
    ],
  });
  const port = await freePort();
  app = new App({
    token: BOT_TOKEN,
    signingSecret: SECRET,
    logLevel: LogLevel.ERROR,
    clientOptions: { slackApiUrl: slack.apiUrl },
  });
  app.command("/llm", async ({ command, ack, respond }) => {
    seen.commands.push(command as unknown as JsonObject);
    await ack();
    await respond({ response_type: "ephemeral", text: `Queued: ${command.text}` });
  });
  app.command("/slow", async ({ ack }) => {
    await new Promise((resolve) => setTimeout(resolve, 400));
    await ack();
  });
  app.event("reaction_added", async ({ event }) => {
    seen.reactions.push(event as unknown as JsonObject);
  });
  app.event("app_mention", async ({ event, context }) => {
    seen.mentions.push({
      event: event as unknown as JsonObject,
      retryNum: context.retryNum,
      retryReason: context.retryReason,
    });
  });
  app.action("approve", async ({ action, body, ack, respond }) => {
    await ack();
    seen.actions.push({ action: action as unknown as JsonObject, body: body as unknown as JsonObject });
    await respond({ replace_original: true, text: "Approved by <@U0BOB00001>" });
  });
  await app.start(port);
  // Generous limits keep the other tests fast; the rate-limit tests restore Slack's real ones.
  slack.setRateLimits({ scale: 100 });
  botUrl = `http://127.0.0.1:${port}/slack/events`;
  slack.setBotEndpoint(botUrl);
});

afterAll(async () => {
  await app?.stop();
  await slack?.stop();
});

describe("Slack emulator with a real Bolt app", () => {
  it("answers auth.test like Slack, so Bolt learns its bot user", async () => {
    const auth = await app.client.auth.test();
    expect(auth).toMatchObject({
      ok: true,
      user_id: slack.workspace.botUserId,
      bot_id: slack.workspace.botId,
    });
    expect(slack.calls("auth.test").length).toBeGreaterThanOrEqual(1);
  });

  it("delivers a signed slash command that Bolt acks, and records the respond() post", async () => {
    const result = await slack.command(ALICE, "swap nvidia/Qwen3.5-397B-A17B-NVFP4 --dry-run");
    expect(result.status).toBe(200);
    expect(result.ackMs).toBeLessThan(3000);
    expect(result.responseUrl.startsWith(`${slack.url}/response/`)).toBe(true);
    const posts = await slack.waitFor(() => result.responses().length === 1 && result.responses(), {
      what: "the respond() post",
    });
    expect(posts[0]).toMatchObject({ response_type: "ephemeral", ok: true });
    expect(posts[0]?.text).toBe("Queued: swap nvidia/Qwen3.5-397B-A17B-NVFP4 --dry-run");
    const command = seen.commands.at(-1);
    expect(command).toMatchObject({
      command: "/llm",
      text: "swap nvidia/Qwen3.5-397B-A17B-NVFP4 --dry-run",
      user_id: ALICE,
      user_name: "alice",
      channel_id: CHANNEL,
      channel_name: "llm-ops",
      team_id: slack.workspace.teamId,
      response_url: result.responseUrl,
      trigger_id: result.triggerId,
    });
    const shown = slack.ephemerals(CHANNEL, ALICE).map((e) => e.text);
    expect(shown).toContain("Queued: swap nvidia/Qwen3.5-397B-A17B-NVFP4 --dry-run");
  });

  it("shows in_channel responses in the channel and refuses a response_url after 5 posts", async () => {
    const result = await slack.command(ALICE, "history");
    await slack.waitFor(() => result.responses().length === 1, { what: "the first respond()" });
    const post = (body: JsonObject) =>
      fetch(result.responseUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    expect((await post({ response_type: "in_channel", text: "History: 3 swaps" })).status).toBe(200);
    expect(slack.messages(CHANNEL).at(-1)).toMatchObject({
      text: "History: 3 swaps",
      source: "response_url",
    });
    for (let i = 0; i < 3; i++) expect((await post({ text: `more ${i}` })).status).toBe(200);
    const sixth = await post({ text: "one too many" });
    expect(sixth.status).toBe(404);
    expect(await sixth.json()).toEqual({ ok: false, error: "used_url" });
    expect(result.responses().map((r) => r.ok)).toEqual([true, true, true, true, true, false]);
  });

  it("times out a late ack like Slack and tells the user", async () => {
    const impatient = await startSlackEmulator({
      botToken: BOT_TOKEN,
      signingSecret: SECRET,
      users: [{ id: ALICE, name: "alice" }],
      ackDeadlineMs: 150,
    });
    try {
      impatient.setBotEndpoint(botUrl);
      const result = await impatient.command(ALICE, "", { command: "/slow", channel: "C0SLOW0001" });
      expect(result).toMatchObject({ status: 0, timedOut: true });
      expect(impatient.ephemerals("C0SLOW0001", ALICE)).toMatchObject([
        { from: "slackbot", text: '/slow failed with the error "operation_timeout"' },
      ]);
    } finally {
      await impatient.stop();
    }
  });

  it("rejects a forged signature with 401 and the listener never runs", async () => {
    const before = seen.commands.length;
    const result = await slack.command(ALICE, "status", { signWith: "not-the-secret" });
    expect(result.status).toBe(401);
    // a signed command after it reaches the listener (which records it before its ack): only that one did
    expect((await slack.command(ALICE, "status signed")).status).toBe(200);
    expect(seen.commands.slice(before).map((c) => c.text)).toEqual(["status signed"]);
    expect(result.responses()).toEqual([]);
  });

  it("rejects a stale timestamp (older than 5 minutes)", async () => {
    const before = seen.commands.length;
    const result = await slack.command(ALICE, "status", {
      timestamp: Math.floor(Date.now() / 1000) - 6 * 60,
    });
    expect(result.status).toBe(401);
    expect(seen.commands.length).toBe(before);
  });

  it("signs exactly as Bolt verifies: v0=HMAC-SHA256(v0:ts:body)", () => {
    // Slack's documented example values
    const sig = signSlackRequest(
      SECRET,
      1531420618,
      "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c",
    );
    expect(sig).toBe("v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503");
  });

  it("records chat.postMessage and chat.update, with threads and edit counts", async () => {
    const parent = await app.client.chat.postMessage({ channel: CHANNEL, text: "Swap sw-1: queued" });
    expect(parent.ok).toBe(true);
    expect(parent.ts).toMatch(/^\d{10}\.\d{6}$/);
    const reply = await app.client.chat.postMessage({
      channel: CHANNEL,
      thread_ts: parent.ts as string,
      text: "download started",
    });
    expect(Number(reply.ts)).toBeGreaterThan(Number(parent.ts));
    await app.client.chat.update({
      channel: CHANNEL,
      ts: parent.ts as string,
      text: "Swap sw-1: downloading 10 %",
    });
    const updated = await app.client.chat.update({
      channel: CHANNEL,
      ts: parent.ts as string,
      text: "Swap sw-1: downloading 50 %",
    });
    expect(updated.message?.text).toBe("Swap sw-1: downloading 50 %");

    const top = slack.message(CHANNEL, parent.ts as string);
    expect(top).toMatchObject({
      text: "Swap sw-1: downloading 50 %",
      edits: 2,
      user: slack.workspace.botUserId,
    });
    expect(top?.history.map((h) => h.text)).toEqual(["Swap sw-1: queued", "Swap sw-1: downloading 10 %"]);
    expect(slack.thread(CHANNEL, parent.ts as string).map((m) => m.text)).toEqual(["download started"]);
    expect(slack.messages(CHANNEL).some((m) => m.text === "download started")).toBe(false);
    expect(slack.calls("chat.update").at(-1)?.args).toMatchObject({ channel: CHANNEL, ts: parent.ts });

    const replies = await app.client.conversations.replies({ channel: CHANNEL, ts: parent.ts as string });
    expect(replies.messages?.map((m) => m.text)).toEqual(["Swap sw-1: downloading 50 %", "download started"]);
    expect(replies.messages?.[0]?.reply_count).toBe(1);

    await expect(
      app.client.chat.update({ channel: CHANNEL, ts: "1.000001", text: "x" }),
    ).rejects.toMatchObject({
      data: { error: "message_not_found" },
    });
    await expect(app.client.chat.postMessage({ channel: "C0NOPE0000", text: "x" })).rejects.toMatchObject({
      data: { error: "channel_not_found" },
    });
  });

  it("authenticates: no token is not_authed, a wrong one invalid_auth", async () => {
    expect((await rawApi("auth.test", {}, {})).body).toEqual({ ok: false, error: "not_authed" });
    const wrong = await rawApi("auth.test", {}, { authorization: "Bearer xoxb-wrong" });
    expect(wrong.body).toEqual({ ok: false, error: "invalid_auth" });
    expect((await rawApi("auth.test", { token: BOT_TOKEN }, {})).body.ok).toBe(true);
  });

  it("lists the bot token's scopes in x-oauth-scopes, on failed calls too, and lets a test take some away", async () => {
    const header = async (method: string) => {
      const res = await fetch(`${slack.apiUrl}${method}`, {
        method: "POST",
        headers: { authorization: `Bearer ${BOT_TOKEN}` },
      });
      return res.headers.get("x-oauth-scopes");
    };
    expect(await header("auth.test")).toBe(manifestBotScopes().join(", "));
    // chat.update of nothing fails, and still tells the scopes (as Slack does)
    expect(await header("chat.update")).toBe(manifestBotScopes().join(", "));
    slack.setGrantedScopes(["commands", "chat:write"]);
    try {
      expect(await header("auth.test")).toBe("commands, chat:write");
      // what @slack/web-api makes of it
      const client = new WebClient(BOT_TOKEN, { slackApiUrl: slack.apiUrl });
      expect((await client.auth.test()).response_metadata?.scopes).toEqual(["commands", "chat:write"]);
    } finally {
      slack.setGrantedScopes(manifestBotScopes());
    }
  });

  it("answers 429 with Retry-After past chat.postMessage's per-channel limit", async () => {
    slack.setRateLimits({ scale: 1 });
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let i = 0; i < 5; i++) {
      const res = await rawApi("chat.postMessage", { channel: "C0BURST001", text: `burst ${i}` });
      statuses.push(res.status);
      if (res.status === 429) {
        retryAfter = res.retryAfter;
        expect(res.body).toEqual({ ok: false, error: "ratelimited" });
      }
    }
    expect(statuses.slice(0, 3)).toEqual([200, 200, 200]);
    expect(statuses).toContain(429);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    expect(slack.rateLimitedCount()).toBeGreaterThan(0);
    // another channel has its own allowance
    expect((await rawApi("chat.postMessage", { channel: "C0OTHER001", text: "fine" })).status).toBe(200);
  });

  it("lets WebClient's retry succeed after a 429", async () => {
    const before = slack.rateLimitedCount();
    slack.forceRateLimit("chat.postMessage", 1, 1);
    const started = Date.now();
    const res = await app.client.chat.postMessage({ channel: CHANNEL, text: "after the storm" });
    expect(res.ok).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(slack.rateLimitedCount()).toBe(before + 1);
    const attempts = slack.calls("chat.postMessage").filter((c) => c.args.text === "after the storm");
    expect(attempts.map((c) => c.status)).toEqual([429, 200]);
    expect(slack.messages(CHANNEL).filter((m) => m.text === "after the storm")).toHaveLength(1);
  });

  it("scales and disables rate limits per test", async () => {
    slack.setRateLimits({ tiers: { tier2: { perMinute: 2, burst: 2 } } });
    const codes: number[] = [];
    for (let i = 0; i < 3; i++) codes.push((await rawApi("usergroups.list", {})).status);
    expect(codes).toEqual([200, 200, 429]);
    slack.setRateLimits({ scale: 10 });
    for (let i = 0; i < 15; i++) expect((await rawApi("usergroups.list", {})).status).toBe(200);
    slack.setRateLimits({ enabled: false, scale: 1, tiers: { tier2: { perMinute: 20, burst: 20 } } });
    for (let i = 0; i < 30; i++)
      expect((await rawApi("usergroups.users.list", { usergroup: "S0APPROVERS" })).status).toBe(200);
    slack.setRateLimits({ enabled: true, scale: 100 });
  });

  it("sends reaction_added to a Bolt listener when a user reacts, and records the reaction", async () => {
    const plan = await app.client.chat.postMessage({
      channel: CHANNEL,
      text: "Plan for sw-2: approve with ✅",
    });
    await app.client.reactions.add({ channel: CHANNEL, timestamp: plan.ts as string, name: "eyes" });
    const delivered = await slack.react(BOB, CHANNEL, plan.ts as string, "white_check_mark");
    expect(delivered.status).toBe(200);
    const event = await slack.waitFor(() => seen.reactions.find((e) => e.reaction === "white_check_mark"), {
      what: "reaction_added at the Bolt listener",
    });
    expect(event).toMatchObject({
      type: "reaction_added",
      user: BOB,
      item_user: slack.workspace.botUserId,
      item: { type: "message", channel: CHANNEL, ts: plan.ts },
    });
    expect(seen.reactions.some((e) => e.reaction === "eyes")).toBe(false);
    const reactions = slack.message(CHANNEL, plan.ts as string)?.reactions;
    expect(reactions).toEqual([
      { name: "eyes", users: [slack.workspace.botUserId], count: 1 },
      { name: "white_check_mark", users: [BOB], count: 1 },
    ]);
    const got = await app.client.reactions.get({ channel: CHANNEL, timestamp: plan.ts as string });
    expect(got.message?.reactions?.map((r) => r.name)).toEqual(["eyes", "white_check_mark"]);
  });

  it("passes X-Slack-Retry-Num and -Reason through to Bolt's context", async () => {
    const event = {
      type: "app_mention",
      user: ALICE,
      text: "<@U0BOTUSER1> status",
      channel: CHANNEL,
      ts: "1.000002",
    };
    const first = await slack.event(event);
    const retry = await slack.event(event, {
      eventId: first.eventId,
      retryNum: 1,
      retryReason: "http_timeout",
    });
    expect([first.status, retry.status]).toEqual([200, 200]);
    const both = await slack.waitFor(() => seen.mentions.length >= 2 && seen.mentions, {
      what: "two app_mentions",
    });
    expect(both[0]?.retryNum).toBeUndefined();
    expect(both[1]).toMatchObject({ retryNum: 1, retryReason: "http_timeout" });
  });

  it("answers url_verification and retries an unacknowledged event with the same event_id", async () => {
    expect((await slack.urlVerification()).ok).toBe(true);
    slack.setBotEndpoint(botUrl.replace("/slack/events", "/not-the-events-path"));
    try {
      const results = await slack.eventWithRetries({
        type: "app_mention",
        user: ALICE,
        text: "hi",
        channel: CHANNEL,
      });
      expect(results.map((r) => r.status)).toEqual([404, 404, 404, 404]);
      expect(new Set(results.map((r) => r.eventId)).size).toBe(1);
    } finally {
      slack.setBotEndpoint(botUrl);
    }
  });

  it("delivers a button click to a Bolt action listener and applies replace_original", async () => {
    const plan = await app.client.chat.postMessage({
      channel: CHANNEL,
      text: "Plan for sw-3",
      blocks: [
        { type: "section", text: { type: "mrkdwn", text: "*Plan* for sw-3" } },
        {
          type: "actions",
          block_id: "approval",
          elements: [
            {
              type: "button",
              action_id: "approve",
              style: "primary",
              text: { type: "plain_text", text: "Approve" },
              value: "sw-3",
            },
            {
              type: "button",
              action_id: "reject",
              style: "danger",
              text: { type: "plain_text", text: "Reject" },
              value: "sw-3",
            },
          ],
        },
      ],
    });
    const click = await slack.clickButton(BOB, CHANNEL, plan.ts as string, "approve");
    expect(click.status).toBe(200);
    const got = await slack.waitFor(() => seen.actions.at(-1), { what: "the approve action" });
    expect(got.action).toMatchObject({
      action_id: "approve",
      block_id: "approval",
      value: "sw-3",
      type: "button",
    });
    expect(got.body).toMatchObject({
      type: "block_actions",
      user: { id: BOB },
      container: { type: "message", message_ts: plan.ts, channel_id: CHANNEL },
      message: { ts: plan.ts, text: "Plan for sw-3" },
      response_url: click.responseUrl,
    });
    await slack.waitFor(() => click.responses().length === 1, { what: "respond(replace_original)" });
    const message = slack.message(CHANNEL, plan.ts as string);
    expect(message).toMatchObject({ text: "Approved by <@U0BOB00001>", edits: 1 });
    expect(message?.blocks).toBeUndefined();
    await expect(slack.clickButton(BOB, CHANNEL, plan.ts as string, "approve")).rejects.toThrow(/no element/);
  });

  it("answers invalid_blocks for 51 blocks, oversized sections and headers", async () => {
    const blocks = Array.from({ length: 51 }, () => ({ type: "divider" }));
    await expect(
      app.client.chat.postMessage({ channel: CHANNEL, text: "too many", blocks }),
    ).rejects.toMatchObject({
      data: {
        ok: false,
        error: "invalid_blocks",
        errors: ["no more than 50 items allowed [json-pointer:/blocks]"],
      },
    });
    await expect(
      app.client.chat.postMessage({
        channel: CHANNEL,
        text: "long",
        blocks: [
          { type: "header", text: { type: "plain_text", text: "h".repeat(151) } },
          { type: "section", text: { type: "mrkdwn", text: "s".repeat(3001) } },
        ],
      }),
    ).rejects.toMatchObject({
      data: {
        error: "invalid_blocks",
        errors: [
          "must be less than 151 characters [json-pointer:/blocks/0/text/text]",
          "must be less than 3001 characters [json-pointer:/blocks/1/text/text]",
        ],
      },
    });
    const fifty = await app.client.chat.postMessage({ channel: CHANNEL, blocks: blocks.slice(0, 50) });
    expect(fifty.ok).toBe(true);
    expect(
      slack.warnings().some((w) => w.method === "chat.postMessage" && w.warning.startsWith("missing_text")),
    ).toBe(true);
  });

  it("serves users, user groups, conversations and permalinks", async () => {
    const user = await app.client.users.info({ user: ALICE });
    expect(user.user).toMatchObject({
      id: ALICE,
      name: "alice",
      real_name: "Alice Operator",
      tz: "Europe/Berlin",
      is_bot: false,
    });
    await expect(app.client.users.info({ user: "U0NOBODY00" })).rejects.toMatchObject({
      data: { error: "user_not_found" },
    });
    const members = await app.client.usergroups.users.list({ usergroup: "S0APPROVERS" });
    expect(members.users).toEqual([BOB]);
    const groups = await app.client.usergroups.list({ include_users: true });
    expect(groups.usergroups?.[0]).toMatchObject({
      id: "S0APPROVERS",
      handle: "llm-approvers",
      users: [BOB],
    });
    const info = await app.client.conversations.info({ channel: CHANNEL });
    expect(info.channel).toMatchObject({ id: CHANNEL, name: "llm-ops", is_member: true });
    const msg = await app.client.chat.postMessage({ channel: "#llm-ops", text: "by name" });
    expect(msg.channel).toBe(CHANNEL);
    const link = await app.client.chat.getPermalink({ channel: CHANNEL, message_ts: msg.ts as string });
    expect(link.permalink).toBe(
      `https://modelswap-test.slack.com/archives/${CHANNEL}/p${(msg.ts as string).replace(".", "")}`,
    );
  });

  it("takes a file upload (getUploadURLExternal, upload URL, completeUploadExternal) into a thread", async () => {
    const parent = await app.client.chat.postMessage({ channel: CHANNEL, text: "benchmarks" });
    const png = Buffer.from("\u0089PNG fake chart bytes");
    await app.client.filesUploadV2({
      channel_id: CHANNEL,
      thread_ts: parent.ts as string,
      file: png,
      filename: "throughput.png",
      title: "Throughput",
      initial_comment: "Throughput vs previous model",
    });
    const reply = slack.thread(CHANNEL, parent.ts as string)[0];
    expect(reply?.text).toBe("Throughput vs previous model");
    expect(reply?.files?.[0]).toMatchObject({
      name: "throughput.png",
      title: "Throughput",
      mimetype: "image/png",
    });
    expect(reply?.files?.[0]?.content?.equals(png)).toBe(true);
    expect(slack.calls().map((c) => c.method)).toEqual(
      expect.arrayContaining(["files.getUploadURLExternal", "files.completeUploadExternal"]),
    );
  });

  it("answers upload errors as Slack does, and knows an uploaded PNG's size", async () => {
    const error = async (method: string, form: Record<string, string>) =>
      (await rawApi(method, form)).body.error;
    expect(await error("files.getUploadURLExternal", { filename: "x.png", length: "0" })).toBe(
      "missing_argument",
    );
    expect(
      await error("files.getUploadURLExternal", {
        filename: "x.png",
        length: "9",
        alt_txt: "a".repeat(1001),
      }),
    ).toBe("alt_txt_too_large");
    expect(
      await error("files.completeUploadExternal", { files: JSON.stringify([{ id: "F0NOTHERE1" }]) }),
    ).toBe("file_not_found");

    const parent = await app.client.chat.postMessage({ channel: CHANNEL, text: "a tiny chart" });
    const png = await svgToPng(
      '<svg xmlns="http://www.w3.org/2000/svg" width="3" height="2"><rect width="3" height="2"/></svg>',
      "DejaVu Sans",
    );
    await app.client.filesUploadV2({
      channel_id: CHANNEL,
      thread_ts: parent.ts as string,
      file: png,
      filename: "tiny.png",
      title: "Tiny",
      alt_text: "a 3×2 black image",
      initial_comment: "the comment wins",
      blocks: [{ type: "section", text: { type: "mrkdwn", text: "ignored next to initial_comment" } }],
    });
    const reply = slack.thread(CHANNEL, parent.ts as string)[0];
    expect(reply?.text).toBe("the comment wins");
    expect(reply?.blocks).toBeUndefined();
    expect(reply?.files?.[0]).toMatchObject({ original_w: 3, original_h: 2, alt_text: "a 3×2 black image" });
    expect(renderConversation(slack, CHANNEL, { times: false })).toContain("[image: Tiny (3×2 PNG)]");
  });

  it("renders a conversation readably", async () => {
    const card = await app.client.chat.postMessage({
      channel: "C0RENDER01",
      text: "Swap sw-9",
      blocks: [
        { type: "header", text: { type: "plain_text", text: "Swap sw-9: Qwen3.5-397B" } },
        { type: "section", text: { type: "mrkdwn", text: "Requested by <@U0ALICE001> :rocket:" } },
        {
          type: "section",
          fields: [
            { type: "mrkdwn", text: "*Host* gpu-1" },
            { type: "mrkdwn", text: "*TP* 8" },
          ],
        },
        { type: "divider" },
        { type: "context", elements: [{ type: "mrkdwn", text: "approvers: <!subteam^S0APPROVERS>" }] },
        {
          type: "actions",
          elements: [
            { type: "button", action_id: "approve", text: { type: "plain_text", text: "Approve" } },
            { type: "button", action_id: "reject", text: { type: "plain_text", text: "Reject" } },
          ],
        },
      ],
    });
    await app.client.chat.update({
      channel: "C0RENDER01",
      ts: card.ts as string,
      text: "Swap sw-9",
      blocks: [
        { type: "header", text: { type: "plain_text", text: "Swap sw-9: Qwen3.5-397B" } },
        { type: "section", text: { type: "mrkdwn", text: "Requested by <@U0ALICE001> :rocket:" } },
        {
          type: "actions",
          elements: [{ type: "button", action_id: "approve", text: { type: "plain_text", text: "Approve" } }],
        },
      ],
    });
    await app.client.chat.postMessage({
      channel: "C0RENDER01",
      thread_ts: card.ts as string,
      text: "download 42 %",
    });
    await app.client.chat.postEphemeral({
      channel: "C0RENDER01",
      user: ALICE,
      text: "Only you can see this",
    });
    const out = renderConversation(slack, "C0RENDER01", { times: false });
    expect(out).toContain("━━ #render-demo");
    expect(out).toContain("modelswap [APP]  (edited 1×)");
    expect(out).toContain("Swap sw-9: Qwen3.5-397B\n    ═══════════════════════");
    expect(out).toContain("Requested by @alice :rocket:");
    expect(out).toContain("[ Approve ]");
    expect(out).not.toContain("[ Reject ]");
    expect(out).toContain("↳ thread: 1 reply");
    expect(out).toContain("│ modelswap [APP]");
    expect(out).toContain("│     download 42 %");
    expect(out).toContain("(only visible to @alice)");
    const full = renderConversation(slack, CHANNEL, { times: false });
    expect(full).toContain("@alice  ran /llm swap nvidia/Qwen3.5-397B-A17B-NVFP4 --dry-run");
    expect(full).toContain('@bob  clicked [ Approve ] on "*Plan* for sw-3"');
    expect(full).toContain(":white_check_mark: 1 (@bob)");
  });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("Slack outages (failFor)", () => {
  it("fails every call of the methods with the status until the window ends, recording each call", async () => {
    slack.setRateLimits({ scale: 100 });
    const windowEnds = Date.now() + 1000;
    slack.failFor(["chat.postMessage", "chat.update"], "service_unavailable", { ms: 1000, status: 503 });
    try {
      const during = await rawApi("chat.postMessage", { channel: OUTAGE, text: "during" });
      expect(during.status).toBe(503);
      expect(during.body).toEqual({ ok: false, error: "service_unavailable" });
      const update = await rawApi("chat.update", { channel: OUTAGE, ts: "1.000001", text: "x" });
      expect(update.status).toBe(503);
      // other methods answer as usual
      expect((await rawApi("auth.test", {})).body.ok).toBe(true);
      expect(slack.messages(OUTAGE)).toHaveLength(0);
      await sleep(windowEnds - Date.now() + 50);
      const after = await rawApi("chat.postMessage", { channel: OUTAGE, text: "after" });
      expect(after.status).toBe(200);
      const calls = slack.calls("chat.postMessage").filter((c) => c.args.channel === OUTAGE);
      expect(calls.map((c) => [c.args.text, c.status, c.ok, c.error])).toEqual([
        ["during", 503, false, "service_unavailable"],
        ["after", 200, true, undefined],
      ]);
      expect(slack.messages(OUTAGE).map((m) => m.text)).toEqual(["after"]);
    } finally {
      slack.endOutage();
    }
  });

  it('answers HTTP 200 {ok:false} by default, covers every method with "*", and endOutage ends it early', async () => {
    slack.failNext("auth.test", "internal_error");
    slack.failFor("*", "fatal_error", { ms: 60_000 });
    try {
      await expect(app.client.auth.test()).rejects.toMatchObject({
        data: { ok: false, error: "fatal_error" },
      });
      expect(slack.calls("auth.test").at(-1)).toMatchObject({ status: 200, ok: false, error: "fatal_error" });
      const users = await rawApi("users.info", { user: ALICE });
      expect([users.status, users.body]).toEqual([200, { ok: false, error: "fatal_error" }]);
    } finally {
      slack.endOutage();
    }
    // the outage used up no failNext failure: it answers now, then the method is back
    await expect(app.client.auth.test()).rejects.toMatchObject({ data: { error: "internal_error" } });
    expect((await app.client.auth.test()).ok).toBe(true);
  });

  it("fails only the calls a failNext's `where` accepts, each filter its own count", async () => {
    slack.failNext("chat.postMessage", "internal_error", { where: (a) => a.text === "first" });
    slack.failNext("chat.postMessage", "channel_not_found", { count: 2, where: (a) => a.text === "second" });
    const other = await rawApi("chat.postMessage", { channel: OUTAGE, text: "other" });
    expect(other.body.ok).toBe(true);
    expect((await rawApi("chat.postMessage", { channel: OUTAGE, text: "second" })).body.error).toBe(
      "channel_not_found",
    );
    expect((await rawApi("chat.postMessage", { channel: OUTAGE, text: "first" })).body.error).toBe(
      "internal_error",
    );
    expect((await rawApi("chat.postMessage", { channel: OUTAGE, text: "first" })).body.ok).toBe(true);
    expect((await rawApi("chat.postMessage", { channel: OUTAGE, text: "second" })).body.error).toBe(
      "channel_not_found",
    );
    expect((await rawApi("chat.postMessage", { channel: OUTAGE, text: "second" })).body.ok).toBe(true);
  });

  it("lets a retrying WebClient through once a 503 window closes; every attempt is a recorded call", async () => {
    const client = new WebClient(BOT_TOKEN, {
      slackApiUrl: slack.apiUrl,
      logLevel: LogLevel.ERROR,
      retryConfig: { retries: 30, factor: 1, minTimeout: 50, maxTimeout: 50 },
    });
    slack.failFor("chat.postMessage", "service_unavailable", { ms: 300, status: 503 });
    const res = await client.chat.postMessage({ channel: OUTAGE, text: "through the outage" });
    expect(res.ok).toBe(true);
    const attempts = slack.calls("chat.postMessage").filter((c) => c.args.text === "through the outage");
    expect(attempts.length).toBeGreaterThan(1);
    expect(attempts.slice(0, -1).every((c) => c.status === 503 && !c.ok)).toBe(true);
    expect(attempts.at(-1)).toMatchObject({ status: 200, ok: true });
    expect(slack.messages(OUTAGE).filter((m) => m.text === "through the outage")).toHaveLength(1);
  });
});

describe("messages deleted by an admin (deleteMessage)", () => {
  const notFound = { data: { ok: false, error: "message_not_found" } };

  it("removes a card without replies: updates and reactions are message_not_found, a reply to it lands in the channel", async () => {
    const ch = "C0DELETE01";
    const card = await app.client.chat.postMessage({ channel: ch, text: "Swap sw-9: queued" });
    const ts = card.ts as string;
    expect(slack.deleteMessage(ch, ts)).toBe("removed");
    expect(slack.message(ch, ts)).toBeUndefined();
    expect(slack.messages(ch)).toEqual([]);
    expect(slack.deletedMessages(ch).map((m) => [m.ts, m.text])).toEqual([[ts, "Swap sw-9: queued"]]);
    await expect(
      app.client.chat.update({ channel: ch, ts, text: "Swap sw-9: downloading" }),
    ).rejects.toMatchObject(notFound);
    await expect(
      app.client.reactions.add({ channel: ch, timestamp: ts, name: "eyes" }),
    ).rejects.toMatchObject(notFound);
    // Slack un-threads a reply to a deleted parent: it is posted, to the channel, without thread_ts.
    const reply = await app.client.chat.postMessage({ channel: ch, thread_ts: ts, text: "download started" });
    expect(reply.ok).toBe(true);
    expect(reply.message?.thread_ts).toBeUndefined();
    expect(slack.messages(ch).map((m) => m.text)).toEqual(["download started"]);
    expect(slack.warnings().at(-1)?.warning).toMatch(/^thread_ts_deleted: /);
    expect(() => slack.deleteMessage(ch, ts)).toThrow(/no message/);
    await expect(slack.react(BOB, ch, ts, "eyes")).rejects.toThrow(/no message/);
    // the bot's new card is what the channel shows
    const fresh = await app.client.chat.postMessage({ channel: ch, text: "Swap sw-9: queued (new card)" });
    expect(slack.messages(ch).map((m) => m.ts)).toEqual([reply.ts, fresh.ts]);
  });

  it("leaves a tombstone for a card with replies: the thread stays and still takes replies", async () => {
    const ch = "C0DELETE02";
    const card = await app.client.chat.postMessage({
      channel: ch,
      text: "Swap sw-10: downloading",
      blocks: [{ type: "section", text: { type: "mrkdwn", text: "*Swap sw-10* downloading" } }],
    });
    const ts = card.ts as string;
    await app.client.chat.postMessage({ channel: ch, thread_ts: ts, text: "download started" });
    await app.client.reactions.add({ channel: ch, timestamp: ts, name: "eyes" });
    expect(slack.deleteMessage(ch, ts)).toBe("tombstoned");

    const tombstone = slack.message(ch, ts);
    expect(tombstone).toMatchObject({
      ts,
      subtype: "tombstone",
      user: "USLACKBOT",
      text: "This message was deleted.",
      reactions: [],
    });
    expect(tombstone?.blocks).toBeUndefined();
    expect(tombstone?.bot_id).toBeUndefined();
    expect(slack.messages(ch).map((m) => [m.ts, m.subtype])).toEqual([[ts, "tombstone"]]);
    expect(slack.thread(ch, ts).map((m) => m.text)).toEqual(["download started"]);
    expect(slack.deletedMessages(ch).map((m) => m.text)).toEqual(["Swap sw-10: downloading"]);
    await expect(app.client.chat.update({ channel: ch, ts, text: "Swap sw-10: done" })).rejects.toMatchObject(
      notFound,
    );
    await expect(
      app.client.reactions.add({ channel: ch, timestamp: ts, name: "tada" }),
    ).rejects.toMatchObject(notFound);
    await expect(slack.clickButton(BOB, ch, ts, "approve")).rejects.toThrow(/no message/);

    const replies = await app.client.conversations.replies({ channel: ch, ts });
    expect(replies.messages?.map((m) => m.text)).toEqual(["This message was deleted.", "download started"]);
    expect(replies.messages?.[0]).toMatchObject({
      subtype: "tombstone",
      hidden: true,
      user: "USLACKBOT",
      thread_ts: ts,
      reply_count: 1,
    });
    // A reply under a tombstone stays in the thread (the conservative reading; see the README).
    const more = await app.client.chat.postMessage({ channel: ch, thread_ts: ts, text: "download finished" });
    expect(more.message?.thread_ts).toBe(ts);
    expect(slack.thread(ch, ts).map((m) => m.text)).toEqual(["download started", "download finished"]);
    expect(slack.messages(ch)).toHaveLength(1);
  });

  it("chat.delete deletes the same way, and the tombstone goes with its thread's last reply", async () => {
    const ch = "C0DELETE03";
    const parent = await app.client.chat.postMessage({ channel: ch, text: "parent" });
    const ts = parent.ts as string;
    const reply = await app.client.chat.postMessage({ channel: ch, thread_ts: ts, text: "only reply" });
    await app.client.chat.delete({ channel: ch, ts });
    expect(slack.message(ch, ts)?.subtype).toBe("tombstone");
    await app.client.chat.delete({ channel: ch, ts: reply.ts as string });
    expect(slack.thread(ch, ts)).toEqual([]);
    expect(slack.messages(ch)).toEqual([]);
    await expect(app.client.conversations.replies({ channel: ch, ts })).rejects.toMatchObject({
      data: { error: "thread_not_found" },
    });
    expect(slack.deletedMessages(ch).map((m) => m.text)).toEqual(["parent", "only reply"]);
  });
});
