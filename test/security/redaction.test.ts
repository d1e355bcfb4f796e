import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { WebClient } from "@slack/web-api";
import { describe, expect, it } from "vitest";
import { escapeMrkdwn } from "../../src/escape-mrkdwn.ts";
import { createLogger } from "../../src/log.ts";
import { message, section } from "../../src/slack/blocks.ts";
import { echo } from "../../src/slack/reply.ts";
import { SlackPoster } from "../../src/slack/slack-poster.ts";
import type { Bench } from "../../testbench/bench.ts";
import { CHANNEL, USERS } from "../../testbench/bench.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * Secrets are redacted by value on every way out, whatever they contain (issue #12, item 6). Before, a
 * secret shorter than 8 characters was printed in the log as it was; one with `"` or `\` escaped the
 * log's redaction (it looked for the secret in text that JSON had already escaped); one with `&`, `<` or
 * `>` escaped Slack's (it looked for it after mrkdwn escaping had turned `&` into `&amp;`); and the answer
 * to a slash command (the ack's body) went to Slack without any redaction. Each canary below is a secret
 * of its own: short, or with one of those characters.
 */
const tag = () => randomBytes(3).toString("hex");
const CANARIES = {
  short: `Q${randomBytes(2).toString("hex")}`, // 5 characters
  quote: `qu"${tag()}`,
  backslash: `bs\\${tag()}`,
  ampersand: `am&${tag()}`,
  less: `lt<${tag()}`,
  greater: `gt>${tag()}`,
} as const;
type Canary = keyof typeof CANARIES;
const NAMES = Object.keys(CANARIES) as Canary[];

/** Every string inside a value (objects, arrays, JSON text parsed where it parses). */
function strings(value: unknown, out: string[] = []): string[] {
  if (typeof value === "string") {
    out.push(value);
    try {
      const parsed: unknown = JSON.parse(value);
      if (typeof parsed === "object" && parsed !== null) strings(parsed, out);
    } catch {
      // not JSON
    }
  } else if (Array.isArray(value)) for (const item of value) strings(item, out);
  else if (typeof value === "object" && value !== null)
    for (const item of Object.values(value)) strings(item, out);
  return out;
}

/** How a person reads mrkdwn: Slack shows &amp; &lt; &gt; as & < >. */
const asShown = (text: string) =>
  text.replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&amp;", "&");

/** The canaries found in any of the texts, as a person would read them. */
function leaked(texts: readonly string[], only: readonly Canary[] = NAMES): Canary[] {
  return only.filter((name) =>
    texts.some((t) => t.includes(CANARIES[name]) || asShown(t).includes(CANARIES[name])),
  );
}

describe("the log", () => {
  it("never prints a secret, short or with quotes and backslashes, in any field", () => {
    const lines: string[] = [];
    const log = createLogger({
      level: "debug",
      secrets: Object.values(CANARIES),
      destination: { write: (line: string) => lines.push(line) },
    });
    for (const secret of Object.values(CANARIES)) {
      log.info({ err: `HTTP 401 for ${secret}`, nested: { detail: [`key ${secret}`] } }, `failed: ${secret}`);
      log.warn({ err: new Error(`refused ${secret}`) }, "a call failed");
      log.child({ name: "child" }).error(`child ${secret}`);
    }
    expect(lines.length).toBe(18);
    expect(lines.join("\n")).toContain("[redacted]");
    const texts = [...lines, ...lines.flatMap((line) => strings(line))];
    expect(leaked(texts)).toEqual([]);
    // the lines are still JSON
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
  });
});

describe("Slack posts", () => {
  it("never carry a secret, escaped for mrkdwn or not, in text or blocks", async () => {
    const sent: unknown[] = [];
    const capture = async (args: unknown) => {
      sent.push(args);
      return { ok: true, ts: "1700000000.000100", message: { ts: "1700000000.000100" } };
    };
    const client = {
      chat: { postMessage: capture, update: capture, postEphemeral: capture },
    } as unknown as WebClient;
    const poster = new SlackPoster(client, Object.values(CANARIES), createLogger({ level: "silent" }));
    for (const secret of Object.values(CANARIES)) {
      const text = `⚠️ ${escapeMrkdwn(`cannot read ${secret}`)} ${echo(secret)}`;
      await poster.post(CHANNEL, message(text, [section(text)]));
      await poster.update(CHANNEL, "1700000000.000100", message(text, [section(text)]));
      await poster.ephemeral(CHANNEL, USERS.alice, message(text, [section(text)]));
    }
    expect(sent).toHaveLength(18);
    expect(JSON.stringify(sent)).toContain("[redacted]");
    expect(leaked(strings(sent))).toEqual([]);
  });
});

let bench: Bench;
useSwapBench({ hosts: [{ name: "gpu-1" }] }, (b) => {
  bench = b;
});

/** Everything the bot said to Slack: Web API calls, messages with their edits, ephemerals (acks too), response_url posts. */
function slackTexts(): string[] {
  const ws = bench.slack.workspace;
  return strings({
    calls: ws.calls,
    messages: ws.knownChannels().map((c) => ws.allMessages(c.id)),
    ephemerals: ws.ephemerals,
    responses: bench.slack.responses(),
  });
}

describe("the running bot", () => {
  it("answers a slash command that carries a secret without it, and logs it nowhere", async () => {
    for (const name of NAMES) {
      // the canary is the bot's HF_TOKEN for this run, and someone pastes it into /llm
      bench.env.HF_TOKEN = CANARIES[name];
      await bench.startBot();
      for (const text of [
        CANARIES[name],
        `status ${CANARIES[name]}`,
        `swap ${CANARIES[name]} --host gpu-1`,
      ]) {
        const ack = await bench.slack.command(USERS.alice, text, { channel: CHANNEL });
        expect(ack.status).toBe(200);
        expect(ack.ackResponse?.text).toBeTruthy();
      }
      await bench.stopBots();
    }
    // the commands reached the bot and were answered (so the absence below means something)
    expect(bench.slack.ephemerals(CHANNEL, USERS.alice).filter((e) => e.source === "ack")).toHaveLength(
      NAMES.length * 3,
    );
    const log = await readFile(join(bench.dir, "bot.log"), "utf8");
    expect(log).toContain("command acked");
    const logLines = log.split("\n").filter((l) => l !== "");
    const inLog = leaked([...logLines, ...logLines.flatMap((l) => strings(l))]);
    const inSlack = leaked(slackTexts());
    expect({ inLog, inSlack }).toEqual({ inLog: [], inSlack: [] });
  }, 120_000);
});
