import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
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
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
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
