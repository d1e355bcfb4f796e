import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { WebClient } from "@slack/web-api";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger, redactSecrets, redactSecretsInJson } from "../../src/log.ts";
import { message, section } from "../../src/slack/blocks.ts";
import { SlackPoster } from "../../src/slack/slack-poster.ts";
import { keys } from "../../src/store/keys.ts";
import { Store } from "../../src/store/store.ts";
import { type BenchRedis, startRedis } from "../../testbench/redis.ts";
import { aRecord } from "../support/records.ts";

/**
 * Redaction by value: a secret is hidden wherever it lands, also when a long text was cut for Slack in
 * the middle of it (most of a token is still the token), also inside JSON, and in swap records.
 */
const TOKEN = "xoxb-1234567890-abcdefghijklmnop";
const KEY_PATH = "/etc/modelswap/keys/id_ed25519";

describe("redactSecrets", () => {
  it("hides every whole occurrence", () => {
    expect(redactSecrets(`a ${TOKEN} b ${TOKEN}`, [TOKEN])).toBe("a [redacted] b [redacted]");
  });

  it("hides a secret cut short by a truncation mark, as long as 8 characters of it remain", () => {
    expect(redactSecrets(`cannot read ${KEY_PATH.slice(0, 20)}…`, [KEY_PATH])).toBe(
      "cannot read [redacted]…",
    );
    expect(redactSecrets(`token ${TOKEN.slice(0, 9)}… and more…`, [TOKEN])).toBe(
      "token [redacted]… and more…",
    );
    // a shorter start says too little to be the secret, and other cut words stay as they are
    expect(redactSecrets("path /etc/mo…", [KEY_PATH])).toBe("path /etc/mo…");
    expect(redactSecrets("/etc/modelswap/config.yaml is fine…", [KEY_PATH])).toBe(
      "/etc/modelswap/config.yaml is fine…",
    );
  });

  it("hides a secret that is the whole text, starts it or ends it, and one of two characters or one", () => {
    expect(redactSecrets(TOKEN, [TOKEN])).toBe("[redacted]");
    expect(redactSecrets(`${TOKEN}${TOKEN}`, [TOKEN])).toBe("[redacted][redacted]");
    expect(redactSecrets(`${TOKEN} ends`, [TOKEN])).toBe("[redacted] ends");
    expect(redactSecrets(`ends ${TOKEN}`, [TOKEN])).toBe("ends [redacted]");
    expect(redactSecrets("a pq b pq", ["pq"])).toBe("a [redacted] b [redacted]");
    expect(redactSecrets("q", ["pq"])).toBe("q");
    expect(redactSecrets("a%b%", ["%"])).toBe("a[redacted]b[redacted]");
  });

  it("hides two secrets that overlap in a text, both whole", () => {
    const a = "secretAAAA-1234";
    const b = "1234-secretBBBB";
    expect(redactSecrets(`x secretAAAA-1234-secretBBBB y`, [a, b])).toBe("x [redacted] y");
    expect(redactSecretsInJson(JSON.stringify({ msg: "secretAAAA-1234-secretBBBB" }), [a, b])).toBe(
      '{"msg":"[redacted]"}',
    );
  });

  it("hides any of a thousand hosts' key paths in a log line, and leaves the rest of the line as it was", () => {
    const paths = Array.from({ length: 1000 }, (_, i) => `/srv/keys/fleet-${i}/id_ed25519`);
    const lines: string[] = [];
    const log = createLogger({ secrets: paths, destination: { write: (l: string) => lines.push(l) } });
    for (const i of [0, 7, 499, 999]) log.warn({ host: `fleet-${i}` }, `cannot read ${paths[i]}: EACCES`);
    expect(lines.map((l) => JSON.parse(l).msg)).toEqual(Array(4).fill("cannot read [redacted]: EACCES"));
    // a path cut short for Slack, and one whose start is only a shared prefix of every path: that stays
    expect(redactSecrets(`cannot read ${paths[42]!.slice(0, 20)}…`, paths)).toBe("cannot read [redacted]…");
    expect(redactSecrets("under /srv/keys/ there are keys", paths)).toBe("under /srv/keys/ there are keys");
  });

  it("finds secrets in JSON as JSON writes them", () => {
    const odd = 'pa"ss\\word-12345';
    expect(redactSecretsInJson(JSON.stringify({ error: `bad ${odd}` }), [odd])).toBe(
      JSON.stringify({ error: "bad [redacted]" }),
    );
  });

  it("keeps a secret out of a Slack message that was truncated in the middle of it", () => {
    const poster = new SlackPoster({} as WebClient, [KEY_PATH], createLogger({ level: "silent" }));
    const long = `${"x".repeat(2990)} ${KEY_PATH}`;
    const clean = JSON.stringify(poster.redact(message("failed", [section(long)])));
    expect(clean).toContain("[redacted]…");
    expect(clean).not.toContain(KEY_PATH.slice(0, 8));
  });
});

describe("the store", () => {
  let dir: string;
  let server: BenchRedis;
  let redis: Redis;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "modelswap-redaction-"));
    server = await startRedis(dir);
    redis = new Redis(server.url);
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("stores no secret that an error text carried into a swap record", async () => {
    const store = new Store(redis, { secrets: [TOKEN, KEY_PATH] });
    const record = aRecord({ reason: `HTTP 401 for ${TOKEN}; key ${KEY_PATH}` });
    await store.swaps.save(record, {
      events: [{ type: "download-failed", log: [`401 ${TOKEN}`], at: record.createdAt }],
    });
    const raw = (await redis.get(keys.swap(record.id))) ?? "";
    expect(raw).toContain("HTTP 401 for [redacted]; key [redacted]");
    expect(raw).not.toContain(TOKEN);
    expect(raw).not.toContain(KEY_PATH);
    expect((await store.swaps.get(record.id))?.id).toBe(record.id);
    const events = JSON.stringify(await redis.lrange(keys.swapEvents(record.id), 0, -1));
    expect(events).toContain("401 [redacted]");
    expect(events).not.toContain(TOKEN);
  });
});
