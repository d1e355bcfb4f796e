import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { type AddressInfo, createServer, type Server } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempDir } from "../support/tmp.ts";

const run = promisify(execFile);
const BIN = new URL("../../bin/modelswap.js", import.meta.url).pathname;

/** Runs the real `modelswap` command; resolves with its exit code and output, whatever the code. */
async function modelswap(args: string[], env: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], {
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "/tmp",
        MODELSWAP_FROM_SOURCE: "1",
        ...env,
      },
      timeout: 30_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

let dir: { path: string; remove: () => Promise<void> };
beforeAll(async () => {
  dir = await tempDir();
});
afterAll(() => dir.remove());

describe("modelswap config check", () => {
  it("lists every problem of a broken config with its path and fix, and exits 1", async () => {
    const path = join(dir.path, "broken.yaml");
    await writeFile(
      path,
      [
        "slack:",
        "  channel: '#llm-ops'",
        "requesters:",
        "  users: [alice]",
        "approvers: {}",
        "hosts:",
        "  - name: GPU_1",
        "    ssh: { address: 'gpu-1;reboot', user: root, privateKeyPath: key, hostKeySha256: nope }",
        "    modelsDir: /srv/models",
        "    engineSourceDir: /opt/sglang",
        "    venv: /opt/sglang/.venv",
        "    currentUnit: sglang",
        "    hfToken: hf_abcdefghijklmnop",
      ].join("\n"),
    );
    const result = await modelswap(["config", "check", path], {
      SLACK_BOT_TOKEN: "xoxb-1-a",
      SLACK_SIGNING_SECRET: "abcdef0123456789",
    });
    expect(result.code).toBe(1);
    for (const where of [
      "config slack.channel",
      "config requesters.users[0]",
      "config approvers",
      "config hosts[0].name",
      "config hosts[0].ssh.address",
      "config hosts[0].ssh.privateKeyPath",
      "config hosts[0].ssh.hostKeySha256",
      "config hosts[0].currentUnit",
      "config hosts[0].hfToken",
    ]) {
      expect(result.stdout).toContain(`✗ ${where}:`);
    }
    expect(result.stdout).toMatch(/✗ 1\d problem\(s\) found/);
    expect(result.stdout.match(/fix: /g)?.length).toBeGreaterThanOrEqual(10);
    // the token-looking value is reported, never printed back
    expect(result.stdout).not.toContain("hf_abcdefghijklmnop");
  });

  it("lists the environment's problems and the file's in one run, each with what was given (#13)", async () => {
    const path = join(dir.path, "typos.yaml");
    await writeFile(
      path,
      [
        "slack: { channel: C0LLMOPS01 }",
        "requesters: { users: [U0ALICE001] }",
        "approvers: { users: [U0BOB00001] }",
        "helth: { intervalSeconds: 5 }",
        "approvals: { allowSelfApproval: 'yes' }",
        "hosts:",
        "  - { name: box, local: true, modelsDir: /srv/models, venv: /opt/sglang/.venv, currentUnit: sglang.service }",
      ].join("\n"),
    );
    const result = await modelswap(["config", "check", path], {
      SLACK_BOT_TOKEN: "xoxb-1-a",
      REDIS_URL: "redis://modelswap:pw-0005@10.0.0.9:99999",
      PORT: "http",
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/✗ 5 problem\(s\) found/);
    expect(result.stdout).toContain("✗ environment SLACK_SIGNING_SECRET: neither SLACK_SIGNING_SECRET");
    expect(result.stdout).toContain("✗ environment REDIS_URL: REDIS_URL's port 99999 is out of range");
    expect(result.stdout).toContain(
      '✗ environment PORT: must be a whole number from 1 to 65535\n      given: "http"\n      fix: set PORT to a TCP port such as 3000',
    );
    expect(result.stdout).toContain("✗ config helth: unknown setting: did you mean health?");
    expect(result.stdout).toContain(
      '✗ config approvals.allowSelfApproval: must be true or false\n      given: "yes" (text)\n      fix: write true or false, e.g. allowSelfApproval: false',
    );
    expect(result.stdout).not.toContain("pw-0005");
    expect(result.stdout).not.toMatch(/Invalid input|expected \w+, received/);
  });

  it("says the config is valid, and starts nothing", async () => {
    const key = join(dir.path, "id");
    await writeFile(key, "key");
    const path = join(dir.path, "good.yaml");
    await writeFile(
      path,
      [
        "slack: { channel: C0LLMOPS01 }",
        "requesters: { users: [U0ALICE001] }",
        "approvers: { users: [U0BOB00001] }",
        "hosts:",
        "  - name: gpu-1",
        `    ssh: { address: 10.0.0.5, user: modelswap, privateKeyPath: ${key}, hostKeySha256: 'SHA256:${"x".repeat(43)}' }`,
        "    modelsDir: /srv/models",
        "    engineSourceDir: /opt/sglang",
        "    venv: /opt/sglang/.venv",
        "    currentUnit: sglang-qwen.service",
      ].join("\n"),
    );
    const result = await modelswap(["config", "check", path], {
      SLACK_BOT_TOKEN: "xoxb-1-a",
      SLACK_APP_TOKEN: "xapp-1-b",
    });
    expect(result).toMatchObject({ code: 0 });
    expect(result.stdout).toContain("is valid: 1 host(s): gpu-1 (ssh modelswap@10.0.0.5:22)");
    expect(result.stdout).not.toContain("weightScale");

    // the demo's and the bench's key, set in a config: valid, and said to be no production setting
    await writeFile(path, `${await readFile(path, "utf8")}\nbench: { weightScale: 32768 }\n`);
    const scaled = await modelswap(["config", "check", path], {
      SLACK_BOT_TOKEN: "xoxb-1-a",
      SLACK_APP_TOKEN: "xapp-1-b",
    });
    expect(scaled).toMatchObject({ code: 0 });
    expect(scaled.stdout).toContain(
      "⚠ bench.weightScale is 32768: plans multiply the weight files' sizes by 32768, as the demo and the test bench need; in production leave it out (1)",
    );
  });

  it("refuses to start with a broken config, listing the problems", async () => {
    const result = await modelswap(["start"], { MODELSWAP_CONFIG: join(dir.path, "missing.yaml") });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("SLACK_BOT_TOKEN is not set");
    expect(result.stderr).toContain("missing.yaml does not exist");
    expect(result.stderr).toContain("CONFIG_INVALID");
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it("answers an unknown command with the usage and exit 2", async () => {
    const result = await modelswap(["frobnicate"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("config check [file]");
  });
});

describe("modelswap arguments", () => {
  /**
   * A valid config and an environment whose Redis and Slack API are one local listener that counts
   * connections: a command that started anything would connect to it (and hang on it); one that reads
   * its arguments first answers at once and leaves it untouched.
   */
  let listener: Server;
  let connections = 0;
  let env: Record<string, string>;
  beforeAll(async () => {
    listener = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
    const { port } = listener.address() as AddressInfo;
    const path = join(dir.path, "args.yaml");
    await writeFile(
      path,
      [
        "slack: { channel: C0LLMOPS01 }",
        "requesters: { users: [U0ALICE001] }",
        "approvers: { users: [U0BOB00001] }",
        "hosts:",
        "  - name: gpu-1",
        "    local: true",
        "    modelsDir: /srv/models",
        "    engineSourceDir: /opt/sglang",
        "    venv: /opt/sglang/.venv",
        "    currentUnit: sglang-qwen.service",
      ].join("\n"),
    );
    env = {
      SLACK_BOT_TOKEN: "xoxb-1-a",
      SLACK_APP_TOKEN: "xapp-1-b",
      SLACK_API_URL: `http://127.0.0.1:${port}/api/`,
      HF_ENDPOINT: `http://127.0.0.1:${port}`,
      REDIS_URL: `redis://127.0.0.1:${port}`,
      MODELSWAP_CONFIG: path,
    };
  });
  afterAll(() => new Promise<void>((resolve) => listener.close(() => resolve())));
  const reachable = () => env;

  it("the environment above is one a start gets past the config with", async () => {
    const result = await modelswap(["config", "check"], env);
    expect(result, JSON.stringify(result)).toMatchObject({ code: 0 });
  });

  const version = async () =>
    (
      JSON.parse(await readFile(new URL("../../package.json", import.meta.url), "utf8")) as {
        version: string;
      }
    ).version;

  it.each([
    [["start", "--help"], "Usage: modelswap start"],
    [["bot", "--help"], "Usage: modelswap bot"],
    [["worker", "-h"], "Usage: modelswap worker"],
    [["demo", "--help"], "Usage: modelswap demo"],
    [["config", "check", "--help"], "Usage: modelswap config check [file]"],
    [["config", "--help"], "Usage: modelswap config <command>"],
    [["help", "worker"], "Usage: modelswap worker"],
    [["help", "config", "check"], "Usage: modelswap config check [file]"],
    [["--help"], "config check [file]"],
    [["help"], "config check [file]"],
  ])("%j prints its usage and exits 0 at once, starting nothing", async (args, usage) => {
    const started = Date.now();
    const result = await modelswap(args, reachable());
    expect(result, JSON.stringify(result)).toMatchObject({ code: 0, stderr: "" });
    expect(result.stdout).toContain(usage);
    expect(result.stdout).toContain("--version");
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(connections).toBe(0);
  });

  it.each([
    [["--version"]],
    [["start", "--version"]],
    [["worker", "--version"]],
    [["config", "check", "--version"]],
  ])("%j prints the package's version and exits 0", async (args) => {
    const result = await modelswap(args, reachable());
    expect(result).toEqual({ code: 0, stdout: `${await version()}\n`, stderr: "" });
  });

  it.each([
    [["worker", "--dry-run"], "unknown option '--dry-run'", "Usage: modelswap worker"],
    [["start", "extra"], "unexpected argument 'extra'", "Usage: modelswap start"],
    [["bot", "-x"], "unknown option '-x'", "Usage: modelswap bot"],
    [["demo", "--fast"], "unknown option '--fast'", "Usage: modelswap demo"],
    [
      ["config", "check", "a.yaml", "b.yaml"],
      "unexpected argument 'b.yaml'",
      "Usage: modelswap config check [file]",
    ],
    [["config", "check", "--strict"], "unknown option '--strict'", "Usage: modelswap config check [file]"],
    [["config", "check", "--help=yes"], "--help", "Usage: modelswap config check [file]"],
    [["config"], "name a command: check", "Usage: modelswap config <command>"],
    [["config", "lint"], "unknown command 'lint'", "check [file]"],
    [["--verbose"], "unknown option '--verbose'", "config check [file]"],
    [["help", "frobnicate"], "unknown command 'frobnicate'", "config check [file]"],
  ])(
    "%j says what is wrong, prints the usage on stderr and exits 2, starting nothing",
    async (args, wrong, usage) => {
      const result = await modelswap(args, reachable());
      expect(result.code, JSON.stringify(result)).toBe(2);
      expect(result.stdout).toBe("");
      expect(result.stderr).toContain(wrong);
      expect(result.stderr).toContain(usage);
      // nothing was started: no config was read, no log line written
      expect(result.stderr).not.toContain("CONFIG_INVALID");
      expect(result.stderr).not.toContain('"level"');
    },
  );
});
