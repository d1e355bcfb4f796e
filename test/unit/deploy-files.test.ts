import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { fileSchema } from "../../src/config/file-schema.ts";

/**
 * What the deployment files promise, checked against the code they deploy: the systemd unit passes
 * `systemd-analyze verify` and waits longer than the bot's shutdown grace; the Dockerfile is multi-stage,
 * runs as a non-root user and copies only what exists; compose runs Redis with AOF and noeviction.
 * (No Docker engine runs on these machines, so the image itself is not built here.)
 */
const run = promisify(execFile);
const ROOT = new URL("../../", import.meta.url).pathname;
const read = (path: string) => readFile(join(ROOT, path), "utf8");

function unitValues(text: string, key: string): string[] {
  return text
    .split("\n")
    .filter((l) => l.startsWith(`${key}=`))
    .map((l) => l.slice(key.length + 1));
}

const graceSeconds = () => fileSchema.shape.swaps.parse({}).shutdownGraceSeconds as number;

describe("deploy/modelswap.service", () => {
  it("passes systemd-analyze verify, and a broken copy does not (the check can fail)", async () => {
    const unit = join(ROOT, "deploy/modelswap.service");
    await run("systemd-analyze", ["verify", unit], { cwd: tmpdir() });
    const dir = await mkdtemp(join(tmpdir(), "unit-"));
    const broken = join(dir, "modelswap.service");
    await writeFile(
      broken,
      (await read("deploy/modelswap.service")).replace("/usr/bin/node", "/nonexistent/node"),
    );
    await expect(run("systemd-analyze", ["verify", broken], { cwd: tmpdir() })).rejects.toThrow(
      /nonexistent/,
    );
  });

  it("starts the real CLI after a config check, restarts on failure, waits out the shutdown grace", async () => {
    const text = await read("deploy/modelswap.service");
    expect(unitValues(text, "ExecStartPre")).toEqual([
      "/usr/bin/node /opt/modelswap/bin/modelswap.js config check",
    ]);
    expect(unitValues(text, "ExecStart")).toEqual(["/usr/bin/node /opt/modelswap/bin/modelswap.js start"]);
    expect(existsSync(join(ROOT, "bin/modelswap.js"))).toBe(true);
    expect(await read("src/cli/modelswap-commands.ts")).toMatch(/"check"/);
    expect(unitValues(text, "Restart")).toEqual(["on-failure"]);
    expect(unitValues(text, "User")).toEqual(["modelswap"]);
    expect(Number(unitValues(text, "TimeoutStopSec")[0])).toBeGreaterThan(graceSeconds() + 10);
    // secrets come from a file, never from the unit
    expect(unitValues(text, "EnvironmentFile")).toEqual(["/etc/modelswap/modelswap.env"]);
    expect(text).not.toMatch(/xox[bpa]-|hf_[A-Za-z0-9]{8}/);
  });
});

describe("Dockerfile", () => {
  it("is multi-stage, runs as a non-root user, copies only paths that exist, stops with SIGTERM and checks /healthz", async () => {
    const text = await read("Dockerfile");
    const lines = text.split("\n").map((l) => l.trim());
    expect(lines.filter((l) => l.startsWith("FROM ")).length).toBeGreaterThanOrEqual(2);
    const users = lines.filter((l) => l.startsWith("USER "));
    expect(users.at(-1)).toBeDefined();
    expect(users.at(-1)).not.toMatch(/USER (root|0)\b/);
    for (const copy of lines.filter((l) => l.startsWith("COPY ") && !l.includes("--from="))) {
      const sources = copy.split(/\s+/).slice(1, -1);
      for (const source of sources)
        expect(existsSync(join(ROOT, source)), `${source} (in ${copy})`).toBe(true);
    }
    expect(lines).toContain("STOPSIGNAL SIGTERM");
    expect(text).toMatch(/HEALTHCHECK[\s\S]*\/healthz/);
    expect(text).toMatch(/ENTRYPOINT \["node", "bin\/modelswap\.js"\]/);
    // what the image runs must be installed by its npm ci --omit=dev
    const pkg = JSON.parse(await read("package.json")) as { dependencies: Record<string, string> };
    expect(Object.keys(pkg.dependencies)).toContain("tsx");
  });

  it("keeps the build context small: tests, bench and git stay out", async () => {
    const ignored = (await read(".dockerignore")).split("\n").map((l) => l.trim());
    for (const path of [".git", "node_modules", "test", "testbench"]) expect(ignored).toContain(path);
  });
});

describe("docker-compose.yml", () => {
  it("runs Redis with AOF and noeviction on a volume, and the bot with its config and key read-only", async () => {
    const compose = parse(await read("docker-compose.yml")) as {
      services: Record<string, Record<string, unknown>>;
      volumes: Record<string, unknown>;
    };
    const redis = compose.services.redis!;
    const command = (redis.command as string[]).join(" ");
    expect(command).toMatch(/--appendonly yes/);
    expect(command).toMatch(/--maxmemory-policy noeviction/);
    expect(redis.volumes).toContain("redis-data:/data");
    expect(Object.keys(compose.volumes)).toContain("redis-data");
    const bot = compose.services.modelswap!;
    const volumes = bot.volumes as string[];
    expect(volumes.every((v) => v.endsWith(":ro"))).toBe(true);
    expect(Number.parseInt(String(bot.stop_grace_period), 10)).toBeGreaterThan(graceSeconds());
    const env = bot.environment as Record<string, string>;
    // secrets are passed through from the operator's environment, never written into the file
    for (const name of ["SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "HF_TOKEN"]) {
      expect(env[name]).toMatch(new RegExp(`^\\$\\{${name}[:?-]`));
    }
    // and what it mounts is ignored by git
    const gitignore = await read(".gitignore");
    expect(gitignore).toMatch(/^deploy\/id_ed25519$/m);
    expect(gitignore).toMatch(/^deploy\/modelswap\.yaml$/m);
  });
});
