import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatProblems, loadConfig, readConfig } from "../../src/config/load-config.ts";
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

  it("reports a key file the bot cannot read", async () => {
    const path = await write("nokey.yaml", good(join(dir.path, "missing-key")));
    const { problems } = await readConfig(env(path));
    expect(problems).toEqual([expect.objectContaining({ path: "hosts[0].ssh.privateKeyPath" })]);
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
      "hosts[0].ssh.privateKeyPath: /etc/modelswap/id_ed25519 cannot be read by the bot",
    ]);
  });
});
