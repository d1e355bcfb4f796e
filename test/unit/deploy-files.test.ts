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
 * runs as a non-root user, copies only what exists and runs the build (no tsx); the build compiles and runs; compose runs Redis with AOF and noeviction.
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

/** The Dockerfile's stages, each with its name (`FROM … AS name`) and its trimmed lines. */
function dockerStages(text: string): { name: string | undefined; lines: string[] }[] {
  const stages: { name: string | undefined; lines: string[] }[] = [];
  for (const line of text.split("\n").map((l) => l.trim())) {
    if (line.startsWith("FROM ")) stages.push({ name: / AS (\S+)$/i.exec(line)?.[1], lines: [] });
    stages.at(-1)?.lines.push(line);
  }
  return stages;
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
  });

  it("builds in one stage and runs the build with only the runtime dependencies: no tsx, no sources", async () => {
    const stages = dockerStages(await read("Dockerfile"));
    const final = stages.at(-1)!;
    const builder = stages.find((s) => s.lines.includes("RUN npm run build"));
    expect(builder, "a stage runs npm run build").toBeDefined();
    expect(builder!.lines).toContain("RUN npm ci --no-audit --no-fund");
    expect(final.lines).toContain(`COPY --from=${builder!.name} /app/dist ./dist`);
    // its node_modules come from a stage that installs without the dev dependencies
    const modules = final.lines.find((l) => /^COPY --from=\S+ \/app\/node_modules /.test(l));
    const depsName = modules?.split(/\s+/)[1]?.slice("--from=".length);
    const deps = stages.find((s) => s.name === depsName);
    expect(deps?.lines).toContain("RUN npm ci --omit=dev --no-audit --no-fund");
    expect(final.lines.join("\n")).not.toMatch(/tsx|COPY (src|commands|jobs|tsconfig)/);
    expect(final.lines.join("\n")).not.toMatch(/npm ci(?! --omit=dev)/);
  });

  it("keeps the build context small: tests, bench and git stay out", async () => {
    const ignored = (await read(".dockerignore")).split("\n").map((l) => l.trim());
    for (const path of [".git", "node_modules", "test", "testbench"]) expect(ignored).toContain(path);
  });
});

describe("the build", () => {
  it("is npm run build into dist/; tsx is only a dev dependency; bin/modelswap.js runs dist/src/cli.js", async () => {
    const pkg = JSON.parse(await read("package.json")) as {
      scripts: Record<string, string>;
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    expect(pkg.scripts.build).toMatch(/tsc -p tsconfig\.build\.json/);
    // what the code reads beside itself is not TypeScript: the build copies it beside the compiled code
    expect(pkg.scripts.build).toMatch(/tsc -p tsconfig\.build\.json && node scripts\/copy-assets\.mjs$/);
    expect(pkg.scripts.start).toBe("node bin/modelswap.js start");
    expect(Object.keys(pkg.dependencies)).not.toContain("tsx");
    expect(Object.keys(pkg.devDependencies)).toContain("tsx");
    expect(Object.keys(pkg.dependencies)).not.toContain("typescript");
    const config = JSON.parse(await read("tsconfig.build.json")) as {
      compilerOptions: Record<string, unknown>;
    };
    expect(config.compilerOptions).toMatchObject({
      noEmit: false,
      outDir: "dist",
      rewriteRelativeImportExtensions: true,
    });
    expect(await read("bin/modelswap.js")).toContain('"../dist/src/cli.js"');
    expect(await read(".gitignore")).toMatch(/^dist\/$/m);
    expect((await read(".dockerignore")).split("\n")).toContain("dist");
  });
  // the build itself is compiled and run in test/package/production-install.test.ts
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
