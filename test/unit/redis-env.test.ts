import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Env, envSecrets } from "../../src/config/env-schema.ts";
import { type ConfigProblem, loadConfig, readConfig } from "../../src/config/load-config.ts";
import { createLogger } from "../../src/log.ts";
import { describeRedis } from "../../src/redis/redis-connection.ts";
import { tempDir } from "../support/tmp.ts";

/** Where Redis is, from the environment: REDIS_URL, or Sentinel with its master name and passwords. */
let dir: { path: string; remove: () => Promise<void> };
let configPath: string;

beforeAll(async () => {
  dir = await tempDir();
  configPath = join(dir.path, "modelswap.yaml");
  await writeFile(
    configPath,
    [
      "slack: { channel: C0SWAPS01 }",
      "requesters: { users: [U0ALICE01] }",
      "approvers: { users: [U0BOB0001] }",
      "hosts:",
      "  - { name: box, local: true, modelsDir: /srv/models, engineSourceDir: /opt/sglang, venv: /opt/sglang/.venv, currentUnit: sglang.service }",
      "",
    ].join("\n"),
  );
});
afterAll(() => dir.remove());

const env = (redis: Record<string, string>) => ({
  SLACK_BOT_TOKEN: "xoxb-1-abc",
  SLACK_SIGNING_SECRET: "0123456789abcdef0123",
  MODELSWAP_CONFIG: configPath,
  ...redis,
});

async function problems(redis: Record<string, string>): Promise<Record<string, ConfigProblem>> {
  const result = await readConfig(env(redis));
  expect(result.config).toBeUndefined();
  return Object.fromEntries(result.problems.map((p) => [p.path, p]));
}

describe("Redis in the environment", () => {
  it("defaults to a local Redis", async () => {
    const { env: parsed } = await loadConfig(env({}));
    expect(parsed.REDIS_URL).toBe("redis://127.0.0.1:6379");
    expect(parsed.REDIS_SENTINELS).toBeUndefined();
    expect(describeRedis(parsed)).toBe("redis://127.0.0.1:6379");
  });

  it("reads a Sentinel list: host:port, a host alone (port 26379), an IPv6 address in brackets", async () => {
    const { env: parsed } = await loadConfig(
      env({
        REDIS_SENTINELS: "10.0.0.1:26379, sentinel-b.internal ,[fd00::3]:26380",
        REDIS_SENTINEL_MASTER: "mymaster",
      }),
    );
    expect(parsed.REDIS_SENTINELS).toEqual([
      { host: "10.0.0.1", port: 26379 },
      { host: "sentinel-b.internal", port: 26379 },
      { host: "fd00::3", port: 26380 },
    ]);
    expect(parsed.REDIS_SENTINEL_MASTER).toBe("mymaster");
    expect(describeRedis(parsed)).toBe(
      "master mymaster via Sentinel 10.0.0.1:26379,sentinel-b.internal:26379,fd00::3:26380",
    );
  });

  it("refuses sentinels without a master name, and a master name without sentinels, saying what to set", async () => {
    const noMaster = await problems({ REDIS_SENTINELS: "10.0.0.1:26379" });
    expect(Object.keys(noMaster)).toEqual(["REDIS_SENTINEL_MASTER"]);
    expect(noMaster.REDIS_SENTINEL_MASTER?.what).toBe(
      "REDIS_SENTINELS is set but REDIS_SENTINEL_MASTER is not",
    );
    expect(noMaster.REDIS_SENTINEL_MASTER?.fix).toContain("sentinel monitor <name>");

    const noSentinels = await problems({ REDIS_SENTINEL_MASTER: "mymaster", REDIS_SENTINEL_PASSWORD: "pw" });
    expect(Object.keys(noSentinels).sort()).toEqual(["REDIS_SENTINELS", "REDIS_SENTINEL_PASSWORD"]);
    expect(noSentinels.REDIS_SENTINELS?.fix).toContain("host:port separated by commas");
  });

  it("refuses REDIS_URL and REDIS_SENTINELS together rather than pick one silently", async () => {
    const both = await problems({
      REDIS_URL: "redis://10.0.0.9:6379",
      REDIS_SENTINELS: "10.0.0.1",
      REDIS_SENTINEL_MASTER: "mymaster",
    });
    expect(Object.keys(both)).toEqual(["REDIS_URL"]);
    expect(both.REDIS_URL?.fix).toMatch(/unset REDIS_URL/);
  });

  it.each([
    "10.0.0.1:99999",
    "10.0.0.1:",
    "redis://10.0.0.1:26379",
    "10.0.0.1:26379,,10.0.0.2:26379",
    "sentinel a:26379",
    "fd00::3:26379",
  ])("refuses the sentinel list %j with an example of the right form", async (list) => {
    const found = await problems({ REDIS_SENTINELS: list, REDIS_SENTINEL_MASTER: "mymaster" });
    expect(Object.keys(found)).toEqual(["REDIS_SENTINELS"]);
    expect(found.REDIS_SENTINELS?.what).toContain("is not host:port");
    expect(found.REDIS_SENTINELS?.fix).toContain("10.0.0.1:26379,10.0.0.2:26379");
  });

  it("reads a Cluster's nodes: host:port, a host alone (port 6379), an IPv6 address in brackets", async () => {
    const { env: parsed } = await loadConfig(
      env({ REDIS_CLUSTER_NODES: "10.0.0.1:7000, redis-b.internal ,[fd00::3]:7002" }),
    );
    expect(parsed.REDIS_CLUSTER_NODES).toEqual([
      { host: "10.0.0.1", port: 7000 },
      { host: "redis-b.internal", port: 6379 },
      { host: "fd00::3", port: 7002 },
    ]);
    expect(describeRedis(parsed)).toBe("Redis Cluster via 10.0.0.1:7000,redis-b.internal:6379,fd00::3:7002");
  });

  it("refuses REDIS_CLUSTER_NODES with REDIS_URL or with Sentinel, and a malformed node list, each with its fix", async () => {
    const withUrl = await problems({
      REDIS_CLUSTER_NODES: "10.0.0.1:7000",
      REDIS_URL: "redis://10.0.0.9:6379",
    });
    expect(Object.keys(withUrl)).toEqual(["REDIS_URL"]);
    expect(withUrl.REDIS_URL?.what).toBe("REDIS_URL and REDIS_CLUSTER_NODES are both set");
    expect(withUrl.REDIS_URL?.fix).toMatch(/unset REDIS_URL/);

    const withSentinel = await problems({
      REDIS_CLUSTER_NODES: "10.0.0.1:7000",
      REDIS_SENTINELS: "10.0.0.1",
      REDIS_SENTINEL_MASTER: "mymaster",
    });
    expect(Object.keys(withSentinel)).toEqual(["REDIS_CLUSTER_NODES"]);
    expect(withSentinel.REDIS_CLUSTER_NODES?.fix).toMatch(/fails over by itself/);

    const malformed = await problems({ REDIS_CLUSTER_NODES: "redis://10.0.0.1:7000" });
    expect(Object.keys(malformed)).toEqual(["REDIS_CLUSTER_NODES"]);
    expect(malformed.REDIS_CLUSTER_NODES?.what).toContain(
      'has "redis://10.0.0.1:7000", which is not host:port',
    );
    expect(malformed.REDIS_CLUSTER_NODES?.fix).toContain("10.0.0.1:6379,10.0.0.2:6379");
  });

  it("treats an empty variable as unset, as docker compose passes an unset one", async () => {
    const { env: parsed } = await loadConfig(
      env({
        REDIS_SENTINELS: "",
        REDIS_SENTINEL_MASTER: "",
        REDIS_PASSWORD: "",
        REDIS_SENTINEL_PASSWORD: "",
        REDIS_CLUSTER_NODES: "",
        // docker-compose.yml passes these so when the operator leaves them unset
        SLACK_APP_TOKEN: "",
        HF_TOKEN: "",
      }),
    );
    expect(parsed.REDIS_SENTINELS).toBeUndefined();
    expect(parsed.REDIS_CLUSTER_NODES).toBeUndefined();
    expect(parsed.REDIS_PASSWORD).toBeUndefined();
    expect(parsed.SLACK_APP_TOKEN).toBeUndefined();
    expect(parsed.HF_TOKEN).toBeUndefined();
  });

  it("treats both passwords, and one inside REDIS_URL, as secrets that the log never prints", async () => {
    const sentinel = await loadConfig(
      env({
        REDIS_SENTINELS: "10.0.0.1",
        REDIS_SENTINEL_MASTER: "mymaster",
        REDIS_PASSWORD: "redis-pass-0001",
        REDIS_SENTINEL_PASSWORD: "sentinel-pass-0002",
      }),
    );
    expect(envSecrets(sentinel.env)).toEqual(
      expect.arrayContaining(["redis-pass-0001", "sentinel-pass-0002"]),
    );
    const inUrl = await loadConfig(env({ REDIS_URL: "redis://modelswap:url%40pass-0003@10.0.0.9:6379/0" }));
    expect(envSecrets(inUrl.env)).toContain("url@pass-0003");
    expect(describeRedis(inUrl.env)).toBe("redis://modelswap:***@10.0.0.9:6379/0");

    const lines: string[] = [];
    const log = createLogger({
      secrets: [...envSecrets(sentinel.env), ...envSecrets(inUrl.env)],
      destination: { write: (line: string) => lines.push(line) },
    });
    log.error({ env: sentinel.env }, "failed with redis-pass-0001 and sentinel-pass-0002");
    log.error("could not reach redis://modelswap:url@pass-0003@10.0.0.9:6379/0");
    const text = lines.join("");
    for (const secret of ["redis-pass-0001", "sentinel-pass-0002", "url@pass-0003"])
      expect(text).not.toContain(secret);
    expect(text).toContain("[redacted]");
  });
});

/**
 * Every form of a credential in REDIS_URL is a secret (issue #27, item 4). ioredis 6 reads the userinfo
 * (`redis://user:pw@`, `redis://:pw@`) and turns every query parameter into an option (utils/parseURL):
 * `?password=` logs in, `?sentinelPassword=` is a password too. Only the userinfo password was redacted, so
 * `redis://host/0?password=…` reached the start-up line and doctor's Redis row as it was. A user name
 * alone (`redis://secret@host`) is a password to redis-cli; with no password anywhere else it is one here.
 */
describe("credentials in REDIS_URL", () => {
  /** What the log prints of each given text, with the secrets of that environment. */
  const logged = (parsed: Env, texts: string[]): string => {
    const lines: string[] = [];
    const log = createLogger({
      secrets: envSecrets(parsed),
      destination: { write: (line: string) => lines.push(line) },
    });
    for (const text of texts) log.error({ url: text }, `could not reach ${text}`);
    return lines.join("");
  };

  it.each([
    {
      url: "redis://10.0.0.9:6379/0?password=qs-pass-0010",
      shown: "redis://10.0.0.9:6379/0?password=***",
      forms: ["qs-pass-0010"],
    },
    {
      // URL-encoded, and a + that URLSearchParams (ioredis) reads as a space
      url: "redis://10.0.0.9:6379/0?db=1&password=q%2Bs%40pass%2F0011+x",
      shown: "redis://10.0.0.9:6379/0?db=1&password=***",
      forms: ["q+s@pass/0011 x", "q%2Bs%40pass%2F0011+x", "q+s@pass/0011+x"],
    },
    {
      url: "rediss://redis.internal:6380?sentinelPassword=sp-0012&password=qp-0013",
      shown: "rediss://redis.internal:6380?sentinelPassword=***&password=***",
      forms: ["sp-0012", "qp-0013"],
    },
    {
      url: "redis://modelswap:up%3Ass-0016@10.0.0.9:6379/0?password=qp-0017",
      shown: "redis://modelswap:***@10.0.0.9:6379/0?password=***",
      forms: ["up:ss-0016", "up%3Ass-0016", "qp-0017"],
    },
    { url: "redis://:pw-0018@10.0.0.9", shown: "redis://:***@10.0.0.9", forms: ["pw-0018"] },
    {
      // redis-cli reads redis://secret@host as the password; ioredis sends it as a user name
      url: "redis://lone%2Dpass-0014@10.0.0.9:6379",
      shown: "redis://***@10.0.0.9:6379",
      forms: ["lone-pass-0014", "lone%2Dpass-0014"],
    },
  ])(
    "$url: every form of the credential is a secret, and the URL is shown with ***",
    async ({ url, shown, forms }) => {
      const { env: parsed } = await loadConfig(env({ REDIS_URL: url }));
      expect(envSecrets(parsed)).toEqual(expect.arrayContaining(forms));
      expect(describeRedis(parsed)).toBe(shown);
      const text = logged(parsed, [url, ...forms, describeRedis(parsed)]);
      for (const form of forms) expect(text).not.toContain(form);
      expect(text).toContain("[redacted]");
    },
  );

  it('Redis\'s own `default` user alone is a user name, not a secret (it would censor every "default")', async () => {
    const { env: parsed } = await loadConfig(env({ REDIS_URL: "redis://default@10.0.0.9:6379" }));
    expect(envSecrets(parsed)).not.toContain("default");
    expect(describeRedis(parsed)).toBe("redis://default@10.0.0.9:6379");
  });

  it("a user name beside REDIS_PASSWORD is an ACL user, not a secret", async () => {
    const { env: parsed } = await loadConfig(
      env({ REDIS_URL: "redis://modelswap@10.0.0.9:6379", REDIS_PASSWORD: "env-pass-0015" }),
    );
    expect(envSecrets(parsed)).toContain("env-pass-0015");
    expect(envSecrets(parsed)).not.toContain("modelswap");
    expect(describeRedis(parsed)).toBe("redis://modelswap@10.0.0.9:6379");
  });

  it("a URL with a password given to REDIS_SENTINELS or REDIS_CLUSTER_NODES is refused without echoing it", async () => {
    const sentinels = await problems({
      REDIS_SENTINELS: "redis://:sent-pw-0020@10.0.0.1:26379",
      REDIS_SENTINEL_MASTER: "mymaster",
    });
    expect(sentinels.REDIS_SENTINELS?.what).toContain(
      'has "redis://:***@10.0.0.1:26379", which is not host:port',
    );
    const nodes = await problems({
      REDIS_CLUSTER_NODES: "10.0.0.2:7000,user:clu-pw-0021@10.0.0.1:7000?password=q-0022",
    });
    expect(nodes.REDIS_CLUSTER_NODES?.what).toContain('has "user:***@10.0.0.1:7000?password=***"');
    const text = JSON.stringify([sentinels, nodes]);
    for (const secret of ["sent-pw-0020", "clu-pw-0021", "q-0022"]) expect(text).not.toContain(secret);
  });
});

describe("REDIS_URL", () => {
  it.each([
    ["redis://:6379", /names no host/],
    ["redis://10.0.0.9:0", /port 0 is out of range/],
    ["redis://10.0.0.9:99999", /port 99999 is out of range/],
    ["redis://modelswap:pw-0004@10.0.0.9:70000", /port 70000 is out of range/],
    ["redis://10.0.0.9:63x9", /port is not a number/],
    ["redis://modelswap:pw/0004@x@10.0.0.9:0", /port 0 is out of range/],
    ["redis://10.0.0.9:99999/0?password=pw-0004", /port 99999 is out of range/],
    ["redis://pw-0004@10.0.0.9:0", /port 0 is out of range/],
    ["http://10.0.0.9:6379", /must start with redis:\/\/ or rediss:\/\//],
    ["10.0.0.9:6379", /must start with redis:\/\/ or rediss:\/\//],
    ["redis://exa mple:6379", /is not a URL/],
  ])("refuses %j, saying why, with an example", async (url, what) => {
    const found = await problems({ REDIS_URL: url });
    expect(Object.keys(found)).toEqual(["REDIS_URL"]);
    expect(found.REDIS_URL?.what).toMatch(what);
    expect(found.REDIS_URL?.fix).toContain("redis://127.0.0.1:6379");
    expect(JSON.stringify(found)).not.toMatch(/pw.0004/);
  });

  it.each(["redis://10.0.0.9", "rediss://redis.internal:6380/2", "redis://u:p%40ss@[fd00::9]:6379"])(
    "accepts %j",
    async (url) => {
      const { env: parsed } = await loadConfig(env({ REDIS_URL: url }));
      expect(parsed.REDIS_URL).toBe(url);
    },
  );
});
