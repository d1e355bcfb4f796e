import { writeFile } from "node:fs/promises";
import { join, posix } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { fileSchema } from "../../src/config/file-schema.ts";
import { configSecrets, formatProblems, loadConfig, readConfig } from "../../src/config/load-config.ts";
import { quote } from "../../src/host/shell-quote.ts";
import { modelDirFor } from "../../src/plan/model-dir.ts";
import { tempDir } from "../support/tmp.ts";

let dir: { path: string; remove: () => Promise<void> };
let keyPath: string;

const env = (configPath: string) => ({
  SLACK_BOT_TOKEN: "xoxb-1-abc",
  SLACK_SIGNING_SECRET: "0123456789abcdef0123",
  MODELSWAP_CONFIG: configPath,
});

const good = (key: string) => `
slack:
  channel: C0SWAPS01
requesters:
  users: [U0ALICE01]
  groups: [S0MLOPS01]
approvers:
  users: [U0BOB0001]
hosts:
  - name: gpu-1
    ssh:
      address: 10.0.0.5
      user: modelswap
      privateKeyPath: ${key}
      hostKeySha256: SHA256:${"a".repeat(43)}
    modelsDir: /srv/models
    engineSourceDir: /opt/sglang
    venv: /opt/sglang/.venv
    currentUnit: sglang-qwen.service
  - name: box
    local: true
    modelsDir: /srv/models
    engineSourceDir: /opt/sglang
    venv: /opt/sglang/.venv
    currentUnit: sglang-kimi.service
    servingPort: 30001
`;

beforeAll(async () => {
  dir = await tempDir();
  keyPath = join(dir.path, "id_ed25519");
  await writeFile(keyPath, "not really a key", { mode: 0o600 });
});
afterAll(() => dir.remove());

async function write(name: string, text: string): Promise<string> {
  const path = join(dir.path, name);
  await writeFile(path, text);
  return path;
}

describe("configuration", () => {
  it("accepts a complete config and fills in defaults", async () => {
    const path = await write("good.yaml", good(keyPath));
    const config = await loadConfig(env(path));
    expect(config.file.hosts[0]).toMatchObject({
      name: "gpu-1",
      servingPort: 30000,
      unitDir: "/etc/systemd/system",
      ssh: { port: 22, connectTimeoutSeconds: 10 },
    });
    expect(config.file.health).toEqual({ intervalSeconds: 30, failureThreshold: 3, checkTimeoutSeconds: 10 });
    expect(config.env.SLACK_API_URL).toBe("https://slack.com/api/");
  });

  it("lists every problem with its path and a fix, not only the first", async () => {
    const broken = good(join(dir.path, "missing-key"))
      .replace("C0SWAPS01", "#swaps")
      .replace(`SHA256:${"a".repeat(43)}`, "ab:cd:ef")
      .replace("name: box", "name: Box_1")
      .replace("servingPort: 30001", "servingPort: 99999\n    slackToken: xoxb-123-secret")
      .replace("modelsDir: /srv/models\n    engineSourceDir", "modelsDir: ../models\n    engineSourceDir");
    const path = await write("broken.yaml", broken);
    const { config, problems } = await readConfig({
      ...env(path),
      SLACK_BOT_TOKEN: "xoxp-user-token",
      PORT: "http",
    });
    expect(config).toBeUndefined();
    const byPath = Object.fromEntries(problems.map((p) => [p.path, p]));
    expect(Object.keys(byPath).sort()).toEqual(
      [
        "SLACK_BOT_TOKEN",
        "PORT",
        "slack.channel",
        "hosts[0].ssh.hostKeySha256",
        "hosts[0].modelsDir",
        "hosts[1].name",
        "hosts[1].servingPort",
        "hosts[1].slackToken",
      ].sort(),
    );
    expect(byPath["slack.channel"]?.fix).toMatch(/channel id/);
    expect(byPath["hosts[0].ssh.hostKeySha256"]?.fix).toContain("ssh-keyscan");
    expect(byPath["hosts[1].slackToken"]?.fix).toMatch(/secrets never live in the config file/);
    expect(byPath.SLACK_BOT_TOKEN?.fix).toContain("xoxb-");
    for (const p of problems) expect(p.fix.length).toBeGreaterThan(10);
    expect(formatProblems(problems)).toContain("✗ config hosts[1].name");
  });

  it("counts each SSH key path among the secrets, beside the environment's tokens", async () => {
    const config = await loadConfig({
      ...env(await write("secrets.yaml", good(keyPath))),
      HF_TOKEN: "hf_abcdefgh",
    });
    expect(configSecrets(config)).toEqual(
      expect.arrayContaining(["xoxb-1-abc", "0123456789abcdef0123", "hf_abcdefgh", keyPath]),
    );
  });

  it("reports a key file the bot cannot read", async () => {
    const keyFile = join(dir.path, "missing-key");
    const path = await write("nokey.yaml", good(keyFile));
    const { problems } = await readConfig(env(path));
    expect(problems).toEqual([expect.objectContaining({ path: "hosts[0].ssh.privateKeyPath" })]);
    expect(problems[0]?.what).toMatch(/cannot be read by the bot: the file does not exist/);
    // the setting is named, the path is not: it says where a credential lives, and this reaches the log
    expect(formatProblems(problems)).not.toContain(keyFile);
  });

  it("refuses a host with both or neither of ssh and local, and duplicate names", async () => {
    const text = good(keyPath).replace("    local: true\n", "").replace("name: box", "name: gpu-1");
    const { problems } = await readConfig(env(await write("dup.yaml", text)));
    expect(problems.map((p) => p.what)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/exactly one of ssh or local/),
        expect.stringMatching(/used twice/),
      ]),
    );
  });

  it("explains YAML syntax errors with their line", async () => {
    const { problems } = await readConfig(env(await write("syntax.yaml", "slack:\n  channel: [C1\n")));
    expect(problems[0]?.path).toMatch(/^line \d+, column \d+$/);
  });

  it("says where the missing file was looked for", async () => {
    const { problems } = await readConfig(env(join(dir.path, "nope.yaml")));
    expect(problems[0]?.what).toContain("nope.yaml does not exist");
  });

  it("requires a signing secret unless Socket Mode is used", async () => {
    const path = await write("good2.yaml", good(keyPath));
    const { problems } = await readConfig({ SLACK_BOT_TOKEN: "xoxb-1", MODELSWAP_CONFIG: path });
    expect(problems.map((p) => p.path)).toEqual(["SLACK_SIGNING_SECRET"]);
    const socket = await readConfig({
      SLACK_BOT_TOKEN: "xoxb-1",
      SLACK_APP_TOKEN: "xapp-1-x",
      MODELSWAP_CONFIG: path,
    });
    expect(socket.problems).toEqual([]);
  });
});

describe("the README's example config", () => {
  it("is valid, apart from the SSH key file that exists only on a real bot machine", async () => {
    const path = new URL("../../modelswap.example.yaml", import.meta.url).pathname;
    const { problems } = await readConfig(env(path));
    expect(problems.map((p) => `${p.path}: ${p.what}`)).toEqual([
      "hosts[0].ssh.privateKeyPath: the SSH key of gpu-1 cannot be read by the bot: the file does not exist",
    ]);
  });
});

describe("hostile config values", () => {
  const unitWith = (value: string) =>
    good(keyPath).replace("currentUnit: sglang-qwen.service", `currentUnit: ${JSON.stringify(value)}`);
  const modelsDirWith = (value: string) =>
    good(keyPath).replace("modelsDir: /srv/models", `modelsDir: ${JSON.stringify(value)}`);

  const hostileUnits = [
    "x;reboot.service",
    "$(reboot).service",
    "`id`.service",
    "-H.service",
    "--now.service",
    ".hidden.service",
    "a b.service",
    "../../etc/evil.service",
    "sglang.service\nExecStartPre=/bin/sh",
    "sglang\u2010qwen.service", // a Unicode hyphen
    "ѕglang.service", // a Cyrillic s
    `${"a".repeat(250)}.service`,
    "sglang-qwen",
  ];
  it.each(hostileUnits)("refuses the unit name %j with a clear message", async (value) => {
    const { problems } = await readConfig(env(await write("unit.yaml", unitWith(value))));
    expect(problems).toEqual([
      expect.objectContaining({
        path: "hosts[0].currentUnit",
        what: "not a systemd service name",
        fix: expect.stringContaining("e.g. sglang-qwen.service"),
      }),
    ]);
  });

  const hostileDirs: Array<[string, RegExp]> = [
    ["/srv/$(reboot)", /absolute path of letters, digits and/],
    ["/srv/`id`", /absolute path of letters, digits and/],
    ["/srv/models;rm -rf /", /absolute path of letters, digits and/],
    ["/srv/my models", /absolute path of letters, digits and/],
    ["/srv/models\n", /absolute path of letters, digits and/],
    ["/srv/mоdels", /absolute path of letters, digits and/], // a Cyrillic o
    ["/srv/*", /absolute path of letters, digits and/],
    ["srv/models", /absolute path of letters, digits and/],
    ["-rf", /absolute path of letters, digits and/],
    ["/srv/../etc", /must not contain \.\./],
    ["/..", /must not contain \.\./],
  ];
  it.each(hostileDirs)("refuses the models dir %j with a clear message", async (value, what) => {
    const { problems } = await readConfig(env(await write("dir.yaml", modelsDirWith(value))));
    expect(problems).toEqual([
      expect.objectContaining({ path: "hosts[0].modelsDir", what: expect.stringMatching(what) }),
    ]);
  });

  it("admits only models dirs that need no quoting and keep every model's directory inside them", () => {
    const raw = parseYaml(good("/etc/modelswap/id_ed25519")) as { hosts: Array<Record<string, unknown>> };
    const piece = fc.constantFrom(
      "/",
      "..",
      ".",
      "a",
      "-",
      "$",
      "`",
      ";",
      " ",
      "\n",
      "о",
      "_",
      "@",
      "+",
      "srv",
    );
    const attempt = fc.oneof(
      fc.string({ unit: "binary", maxLength: 30 }),
      fc.array(piece, { maxLength: 10 }).map((p) => p.join("")),
      fc.array(piece, { maxLength: 10 }).map((p) => `/${p.join("")}`),
    );
    let admitted = 0;
    fc.assert(
      fc.property(attempt, (value) => {
        const hosts = raw.hosts.map((h, i) => (i === 0 ? { ...h, modelsDir: value } : h));
        const parsed = fileSchema.safeParse({ ...raw, hosts });
        if (!parsed.success) return;
        admitted += 1;
        expect(quote(value)).toBe(value); // nothing in it means anything to a shell
        const modelDir = modelDirFor(value, "org/model", "0123456789abcdef0123456789abcdef01234567");
        expect(posix.resolve(modelDir).startsWith(`${posix.resolve(value)}/`.replace("//", "/"))).toBe(true);
      }),
      { numRuns: 2000 },
    );
    expect(admitted).toBeGreaterThan(20);
  });
});
