import { execFile } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { manifestBotScopes } from "../../src/slack/manifest-scopes.ts";
import { type Bench, startBench } from "../../testbench/bench.ts";
import { freePort } from "../../testbench/free-port.ts";
import { benchFrontDoor } from "../../testbench/front-door-watch.ts";
import { type CliResult, runModelswap } from "../support/modelswap-cli.ts";

/**
 * `modelswap doctor` as an operator runs it: the real command, a child process, against the bench (real
 * redis-server and sshd, the Slack emulator, simulated GPU hosts). Every failure the doctor names is
 * provoked for real here — a revoked token, fewer scopes, a Redis that is down or evicts, a wrong pin,
 * an unknown key, sudo rules that lack a command, an old hf, … — and the test reads the row, its code,
 * its fix and the exit code, as a person would.
 */
const run = promisify(execFile);

/** A host that needs no engine and serves nothing: its sandbox, its SSH key, its faults. */
const LIGHT = { serving: false, engine: "none" } as const;

let bench: Bench;
let baseConfig: Record<string, unknown>;
let redis: Redis;

beforeAll(async () => {
  bench = await startBench({
    logTo: "silent",
    // a handshake of sixteen hosts at once on a loaded 2-core machine can take many seconds (CI's runs are
    // up to 2× slower than this machine's); the one host that never answers gets 3 s of its own
    // (configWith's "silent"), so giving it up is still quick
    connectTimeoutSeconds: 20,
    hosts: [
      // it serves a model, as a host modelswap takes over does: the "serving" row looks at it
      { name: "gpu-1", serving: { preset: "qwen3-fp8-dense" }, sudo: true },
      // each broken in one way, for real: by the way it is reached, or by its sandbox's state
      { name: "gone", reach: "refused", ...LIGHT },
      { name: "silent", reach: "silent", ...LIGHT },
      { name: "stale", reach: "stale-key", ...LIGHT },
      { name: "sudo-partial", sudo: true, ...LIGHT },
      { name: "sudo-none", sudo: true, faults: { sudoRules: [] }, ...LIGHT },
      { name: "sudo-no-kill", sudo: true, ...LIGHT },
      { name: "no-hf", hubCli: "none", ...LIGHT },
      { name: "old-hf", faults: { hfVersion: "0.34.4" }, ...LIGHT },
      { name: "read-only", ...LIGHT },
      { name: "full-disk", faults: { diskFreeBytes: 5 * 2 ** 30 }, ...LIGHT },
      { name: "low-disk", faults: { diskFreeBytes: 60 * 2 ** 30 }, ...LIGHT },
      { name: "no-gpu", faults: { nvidiaSmi: "driver-error" }, ...LIGHT },
      { name: "fd-1", frontDoor: true, ...LIGHT },
    ],
  });
  baseConfig = parse(await readFile(bench.configPath, "utf8")) as Record<string, unknown>;
  redis = new Redis(bench.redis.url);
  // this machine's disk may have less: the sim's df says 7 TB, like the seeds' GPU box, unless a host is
  // about its disk
  for (const { sim } of bench.hosts.values())
    if ((await readFile(join(sim.stateDir, "faults.json"), "utf8")).includes("diskFreeBytes") === false)
      await sim.setFault("diskFreeBytes", 7e12);
  // sudo's rules as docs/operations.md gives them, but for the systemctl enable/disable one
  const partial = bench.host("sudo-partial").sim;
  await partial.setFault("sudoRules", [
    `/usr/bin/tee ^${partial.unitDir}/sglang-[a-z0-9-]+[.]service$`,
    `${partial.binDir}/systemctl daemon-reload`,
  ]);
  // docs/operations.md's rules without MODELSWAP_FAST_STOP (a sudoers file from before it)
  const noKill = bench.host("sudo-no-kill").sim;
  await noKill.setFault("sudoRules", [
    `/usr/bin/tee ^${noKill.unitDir}/(sglang|vllm)-[a-z0-9-]+[.]service$`,
    `${noKill.binDir}/systemctl daemon-reload`,
    `${noKill.binDir}/systemctl ^(enable|disable) --now (sglang|vllm)-[a-z0-9-]+[.]service$`,
  ]);
  // The bench's SSH user may be root, whom mode bits do not stop: an immutable directory stops anyone
  // (EPERM from the kernel), as a read-only mount or another owner stops the bot's user.
  await run("chattr", ["+i", bench.host("read-only").sim.modelsDir]);
}, 180_000);

afterAll(async () => {
  if (bench !== undefined)
    await run("chattr", ["-i", bench.host("read-only").sim.modelsDir]).catch(() => undefined);
  redis?.disconnect();
  await bench?.stop();
});

interface Doctor extends CliResult {
  ms: number;
}

/** Runs the real `modelswap doctor` with the bench's environment (plus `env`); whatever its exit code. */
async function doctor(args: string[] = [], env: Record<string, string> = {}): Promise<Doctor> {
  const started = Date.now();
  const result = await runModelswap(["doctor", ...args], { ...bench.env, ...env }, 90_000);
  return { ...result, ms: Date.now() - started };
}

type HostEntry = Record<string, unknown> & { name: string; ssh?: Record<string, unknown> };

/**
 * The bench's config with only the named hosts, plus `derived` ones (gpu-1's entry under another name,
 * with one setting changed), and whatever `change` does; written to a file of its own: its path.
 */
async function configWith(
  name: string,
  hosts: string[],
  derived: Record<string, (host: HostEntry) => void> = {},
  change: (config: Record<string, unknown>) => void = () => undefined,
): Promise<string> {
  const config = structuredClone(baseConfig);
  const all = config.hosts as HostEntry[];
  const gpu1 = all.find((h) => h.name === "gpu-1")!;
  const extra = Object.entries(derived).map(([hostName, edit]) => {
    const host = { ...structuredClone(gpu1), name: hostName };
    edit(host);
    return host;
  });
  config.hosts = [...all.filter((h) => hosts.includes(h.name)), ...extra];
  for (const host of config.hosts as HostEntry[])
    if (host.name === "silent") host.ssh!.connectTimeoutSeconds = 3;
  change(config);
  const path = join(bench.dir, `doctor-${name}.yaml`);
  await writeFile(path, stringify(config));
  return path;
}

interface Row {
  mark: string;
  saw: string;
  code?: string;
  fix?: string;
}

/** One row of the table, as printed under its target's heading (`Slack`, `Redis`, `host gpu-1`). */
function rowOf(out: string, target: string, check: string): Row {
  const lines = out.split("\n");
  const start = lines.indexOf(target);
  expect(start, `a "${target}" block in:\n${out}`).toBeGreaterThanOrEqual(0);
  for (let i = start + 1; i < lines.length && lines[i] !== ""; i++) {
    const m = /^ {2}(✔|!|✖) (\S+(?: \S+)*?) {2,}(.*)$/.exec(lines[i]!);
    if (m === null || m[2] !== check) continue;
    const next = /^ {4}\s*([A-Z][A-Z_]+) · fix: (.*)$/.exec(lines[i + 1] ?? "");
    return {
      mark: m[1]!,
      saw: m[3]!,
      ...(next === null ? {} : { code: next[1]!, fix: next[2]! }),
    };
  }
  throw new Error(`no row "${check}" under "${target}" in:\n${out}`);
}

const lastLine = (out: string) => out.trim().split("\n").at(-1) ?? "";

describe("modelswap doctor, when everything is right", () => {
  let result: Doctor;
  beforeAll(async () => {
    // every check of a healthy host passes, however loaded the machine: 60 s each, not the default 15 s
    result = await doctor(["--timeout", "60"], { MODELSWAP_CONFIG: await configWith("good", ["gpu-1"]) });
  }, 120_000);

  it("prints one table, every row ✔, ends with the summary, and exits 0", () => {
    expect(result.stderr).toBe("");
    expect(result.code, result.stdout + result.stderr).toBe(0);
    const out = result.stdout;
    expect(rowOf(out, "Slack", "bot token")).toEqual({
      mark: "✔",
      saw: "team modelswap test (T0TESTTEAM), bot user modelswap (U0BOTUSER1)",
    });
    expect(rowOf(out, "Slack", "scopes").saw).toBe(
      `all ${manifestBotScopes().length} scopes manifest.yml asks for are granted`,
    );
    expect(rowOf(out, "Slack", "socket mode").mark).toBe("✔");
    expect(rowOf(out, "Slack", "channel").saw).toBe("C0LLMOPS01 can be read (conversations.history)");
    expect(rowOf(out, "Redis", "reachable").saw).toMatch(
      /^redis:\/\/127\.0\.0\.1:\d+\/?: PONG in \d+ ms, Redis \d/,
    );
    expect(rowOf(out, "Redis", "eviction").saw).toBe("maxmemory-policy noeviction");
    expect(rowOf(out, "Redis", "aof").saw).toBe("appendonly yes");
    const ssh = rowOf(out, "host gpu-1", "ssh");
    expect(ssh.mark).toBe("✔");
    expect(ssh.saw).toContain(`host key ${bench.sshd.hostKeySha256()} matches the pin; logged in as`);
    expect(rowOf(out, "host gpu-1", "sudo").saw).toBe(
      "sudo -n allows all 8 commands the switch and rollback run",
    );
    expect(rowOf(out, "host gpu-1", "hf").saw).toBe("hf 1.33.0");
    expect(rowOf(out, "host gpu-1", "venv").saw).toMatch(/\/bin\/python runs: Python 3\.\d+/);
    expect(rowOf(out, "host gpu-1", "engine upstream").saw).toBe(
      `${bench.upstream.url}: 2 branches and tags, main at ${bench.upstream.commits.main!.slice(0, 7)}`,
    );
    expect(rowOf(out, "host gpu-1", "models dir").saw).toMatch(/: writable by \S+, 6\.4 TiB free$/);
    expect(rowOf(out, "host gpu-1", "fence").saw).toBe("flock present; no swap has changed gpu-1 yet");
    expect(rowOf(out, "host gpu-1", "gpus").saw).toMatch(
      /^8 × NVIDIA RTX PRO 6000 Blackwell Server Edition \(sm_120, [\d.]+ GiB\), driver \d/,
    );
    expect(out).not.toMatch(/[✖!] /);
    expect(rowOf(out, "host gpu-1", "serving").saw).toMatch(
      /^sglang-gpu-1\.service active; \/health_generate answered 200 on port \d+$/,
    );
    expect(lastLine(out)).toBe("✔ 16 checks passed");
  });

  it("prints no colour when stdout is not a terminal, and no secret", () => {
    expect(result.stdout).not.toContain("\u001b[");
    expect(result.stdout).not.toContain(bench.botToken);
    expect(result.stdout).not.toContain(String((baseConfig.hosts as HostEntry[])[0]!.ssh!.privateKeyPath));
  });

  it("--json gives the same checks for a program, and --host picks the hosts", async () => {
    // the bench's own config: gpu-1 and every broken host; only gpu-1 is asked about
    const json = await doctor(["--json", "--host", "gpu-1", "--timeout", "60"]);
    expect(json.code, json.stdout + json.stderr).toBe(0);
    const report = JSON.parse(json.stdout) as { ok: boolean; problems: number; checks: { target: string }[] };
    expect(report).toMatchObject({ ok: true, problems: 0 });
    expect(new Set(report.checks.map((c) => c.target))).toEqual(new Set(["Slack", "Redis", "host gpu-1"]));
  }, 120_000);

  it("a warning (60 GiB free) is shown and named, but the doctor still exits 0", async () => {
    const low = await doctor(["--host", "low-disk", "--timeout", "60"]);
    expect(rowOf(low.stdout, "host low-disk", "models dir")).toMatchObject({
      mark: "!",
      code: "MODELS_DIR_LOW_SPACE",
    });
    expect(rowOf(low.stdout, "host low-disk", "models dir").saw).toMatch(/, 60\.0 GiB free$/);
    expect(lastLine(low.stdout)).toBe(
      "✔ 16 checks passed, 2 warnings: low-disk models dir (MODELS_DIR_LOW_SPACE), low-disk serving (SERVING_UNIT_MISSING)",
    );
    expect(low.code, low.stdout + low.stderr).toBe(0);
  }, 120_000);
});

describe("modelswap doctor, refusing bad command lines and configs", () => {
  it("an unknown option, host or timeout is refused with what is accepted, exit 2, nothing checked", async () => {
    const option = await doctor(["--hosts", "gpu-1"]);
    expect(option.code).toBe(2);
    expect(option.stderr).toContain("modelswap doctor: unknown option '--hosts'");
    expect(option.stderr).toContain("Usage: modelswap doctor [options]");
    expect(option.stderr).toContain("--host <name>…");
    const host = await doctor(["--host", "gpu-9"]);
    expect(host.code).toBe(2);
    expect(host.stderr).toContain("no host named gpu-9");
    expect(host.stderr).toContain("hosts: gpu-1, gone, silent, stale,");
    const timeout = await doctor(["--timeout", "soon"]);
    expect(timeout.code).toBe(2);
    expect(timeout.stderr).toContain("--timeout must be a whole number of seconds from 1 to 300, not 'soon'");
  }, 120_000);

  it("an invalid config prints its problems and exits 1", async () => {
    const path = await configWith("invalid", ["gpu-1"], {}, (config) => {
      (config.hosts as HostEntry[])[0]!.name = "GPU_1";
    });
    const result = await doctor([], { MODELSWAP_CONFIG: path });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain("the config cannot be loaded, so nothing was checked");
    expect(result.stdout).toContain("✗ config hosts[0].name:");
  }, 120_000);
});

describe("modelswap doctor names what is wrong with Slack", () => {
  let tokens: Doctor;
  let granted: Doctor;
  beforeAll(async () => {
    // one host that fails fast: these runs are about Slack
    tokens = await doctor(["--host", "gone"], {
      SLACK_BOT_TOKEN: "xoxb-revoked-0000",
      SLACK_APP_TOKEN: "xapp-1-A0WRONG-1-deadbeef",
    });
    bench.slack.setGrantedScopes(
      manifestBotScopes().filter((s) => s !== "files:write" && s !== "reactions:write"),
    );
    try {
      const path = await configWith("slack", ["gone"], {}, (config) => {
        config.slack = { channel: "C0NOSUCH01" };
      });
      granted = await doctor([], { MODELSWAP_CONFIG: path });
    } finally {
      bench.slack.setGrantedScopes(manifestBotScopes());
    }
  }, 180_000);

  it("a revoked bot token: SLACK_TOKEN_INVALID, and the token is never printed", () => {
    expect(tokens.code).toBe(1);
    const row = rowOf(tokens.stdout, "Slack", "bot token");
    expect(row).toMatchObject({
      mark: "✖",
      saw: "auth.test refused SLACK_BOT_TOKEN: invalid_auth",
      code: "SLACK_TOKEN_INVALID",
    });
    expect(row.fix).toContain("copy the Bot User OAuth Token (xoxb-…)");
    expect(tokens.stdout).not.toContain("xoxb-revoked-0000");
  });

  it("Slack out of reach: SLACK_UNREACHABLE for the bot token and the app-level token alike, never 'token invalid', and nothing printed but the table", async () => {
    const closed = await freePort();
    const away = await doctor(["--host", "gone", "--timeout", "3"], {
      SLACK_API_URL: `http://127.0.0.1:${closed}/api/`,
      SLACK_APP_TOKEN: "xapp-1-A0MODELSWP-1-unreachable",
    });
    expect(away.code).toBe(1);
    for (const check of ["bot token", "socket mode"]) {
      const row = rowOf(away.stdout, "Slack", check);
      expect(row, check).toMatchObject({ mark: "✖", code: "SLACK_UNREACHABLE" });
      expect(row.saw, check).toMatch(/ECONNREFUSED|could not be reached|request failed/);
      expect(row.fix, check).toMatch(/reaches Slack's Web API/);
    }
    // the Slack SDK's own console lines ("[WARN] web-api:WebClient …") do not leak around the table
    expect(`${away.stdout}\n${away.stderr}`).not.toMatch(/\[(WARN|ERROR|INFO)\]/);
  }, 120_000);

  it("a wrong app-level token: SLACK_APP_TOKEN_INVALID", () => {
    expect(tokens.code).toBe(1);
    const row = rowOf(tokens.stdout, "Slack", "socket mode");
    expect(row).toMatchObject({
      mark: "✖",
      saw: "apps.connections.open refused SLACK_APP_TOKEN: invalid_auth",
      code: "SLACK_APP_TOKEN_INVALID",
    });
    expect(row.fix).toContain("connections:write");
    expect(tokens.stdout).not.toContain("xapp-1-A0WRONG-1-deadbeef");
  });

  it("scopes the manifest asks for and the app was not granted: SLACK_SCOPES_MISSING names them", () => {
    expect(granted.code).toBe(1);
    const row = rowOf(granted.stdout, "Slack", "scopes");
    const all = manifestBotScopes().length;
    expect(row.mark).toBe("✖");
    expect(row.saw).toBe(
      `missing files:write, reactions:write (granted ${all - 2} of the ${all} manifest.yml asks for)`,
    );
    expect(row.code).toBe("SLACK_SCOPES_MISSING");
    expect(row.fix).toContain("reinstall it (Install App → Reinstall to Workspace)");
  });

  it("a channel the bot cannot read: SLACK_CHANNEL_UNREACHABLE", () => {
    expect(granted.code).toBe(1);
    const row = rowOf(granted.stdout, "Slack", "channel");
    expect(row).toMatchObject({ mark: "✖", saw: "slack.channel C0NOSUCH01: channel_not_found" });
    expect(row.code).toBe("SLACK_CHANNEL_UNREACHABLE");
    expect(row.fix).toContain("set slack.channel to the channel's id");
  });
});

describe("modelswap doctor names what is wrong with Redis", () => {
  let down: Doctor;
  let lossy: Doctor;
  let port: number;
  beforeAll(async () => {
    port = await freePort();
    down = await doctor(["--host", "gone", "--timeout", "2"], { REDIS_URL: `redis://127.0.0.1:${port}` });
    // the bench's own redis-server, set the way a Redis restarted without its config file comes back
    await redis.config("SET", "maxmemory-policy", "allkeys-lru");
    await redis.config("SET", "appendonly", "no");
    try {
      lossy = await doctor(["--host", "gone"]);
    } finally {
      await redis.config("SET", "maxmemory-policy", "noeviction");
      await redis.config("SET", "appendonly", "yes");
    }
  }, 180_000);

  it("nothing listens at REDIS_URL: REDIS_UNREACHABLE, within the timeout", () => {
    expect(down.code).toBe(1);
    const row = rowOf(down.stdout, "Redis", "reachable");
    expect(row.mark).toBe("✖");
    expect(row.saw).toMatch(
      new RegExp(`127\\.0\\.0\\.1:${port}.*no connection within 2 s \\(connect ECONNREFUSED`),
    );
    expect(row.code).toBe("REDIS_UNREACHABLE");
    expect(row.fix).toContain("set REDIS_URL to where it listens");
    expect(() => rowOf(down.stdout, "Redis", "eviction")).toThrow(/no row/);
  });

  it("maxmemory-policy allkeys-lru: REDIS_EVICTION_POLICY, in the start-up warning's words", () => {
    expect(lossy.code).toBe(1);
    const row = rowOf(lossy.stdout, "Redis", "eviction");
    expect(row.mark).toBe("✖");
    expect(row.saw).toContain(
      "Redis runs with maxmemory-policy allkeys-lru: when it fills up it evicts keys",
    );
    expect(row.code).toBe("REDIS_EVICTION_POLICY");
    expect(row.fix).toContain("set maxmemory-policy noeviction in redis.conf");
  });

  it("AOF off: REDIS_AOF_OFF", () => {
    expect(lossy.code).toBe(1);
    const row = rowOf(lossy.stdout, "Redis", "aof");
    expect(row.mark).toBe("✖");
    expect(row.saw).toContain("(appendonly no)");
    expect(row.code).toBe("REDIS_AOF_OFF");
    expect(row.fix).toContain("set appendonly yes");
  });
});

describe("modelswap doctor names what is wrong with each host of a broken fleet", () => {
  let fleet: Doctor;
  let wrongPort = 0;
  let wrongKey: string;
  const upstream = () => `file://${bench.dir}/no-such-upstream.git`;
  beforeAll(async () => {
    wrongPort = await freePort();
    wrongKey = join(bench.dir, "doctor-unknown-key");
    await run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", wrongKey]);
    const path = await configWith(
      "fleet",
      [
        "gpu-1",
        "gone",
        "silent",
        "stale",
        "sudo-partial",
        "sudo-none",
        "sudo-no-kill",
        "no-hf",
        "old-hf",
        "read-only",
        "full-disk",
        "no-gpu",
      ],
      {
        "wrong-key": (h) => {
          h.ssh!.privateKeyPath = wrongKey;
        },
        "no-venv": (h) => {
          h.venv = "/opt/no-such-venv";
        },
        "bad-upstream": (h) => {
          h.engineUpstream = upstream();
        },
        "no-models": (h) => {
          h.modelsDir = "/srv/no-such-models";
        },
        // gpu-1's unit runs, but the config names a port it does not listen on
        "wrong-port": (h) => {
          h.servingPort = wrongPort;
        },
      },
    );
    // a fence file something else wrote over: no swap could change that host
    const fence = join(bench.host("no-gpu").sim.modelsDir, ".modelswap");
    await mkdir(fence, { recursive: true });
    await writeFile(join(fence, "fence"), "not a number\n");
    fleet = await doctor(["--timeout", "20"], { MODELSWAP_CONFIG: path });
  }, 180_000);

  it("exits 1, and the healthy host among them still gets every row ✔", () => {
    expect(fleet.code, fleet.stderr).toBe(1);
    for (const check of [
      "ssh",
      "sudo",
      "hf",
      "venv",
      "engine upstream",
      "models dir",
      "serving",
      "fence",
      "gpus",
    ])
      expect(rowOf(fleet.stdout, "host gpu-1", check).mark, check).toBe("✔");
    expect(lastLine(fleet.stdout)).toMatch(/^✖ 16 problems: gone ssh \(HOST_UNREACHABLE\), silent ssh/);
    // the light hosts serve nothing: each a warning of its own kind, and no other but the sudo rules
    // without the fast stop
    const warnings = lastLine(fleet.stdout).split("warnings: ")[1]?.split(", ") ?? [];
    expect(warnings).toContain("sudo-no-kill sudo (HOST_SUDO_PARTIAL)");
    expect(
      warnings
        .filter((w) => w !== "sudo-no-kill sudo (HOST_SUDO_PARTIAL)")
        .every((w) => w.endsWith("serving (SERVING_UNIT_MISSING)")),
    ).toBe(true);
  });

  it("a host key that is not the pin: HOST_KEY_MISMATCH shows both and how to check", () => {
    const row = rowOf(fleet.stdout, "host stale", "ssh");
    expect(row.mark).toBe("✖");
    const pinned = (baseConfig.hosts as HostEntry[]).find((h) => h.name === "stale")!.ssh!.hostKeySha256;
    expect(row.saw).toContain(
      `presented host keys ${bench.sshd.hostKeySha256()} (ED25519), ${bench.sshd.hostKeyFingerprints().ecdsa} (ECDSA), but the config pins ${pinned}`,
    );
    expect(row.code).toBe("HOST_KEY_MISMATCH");
    expect(row.fix).toContain(`ssh-keyscan -t ed25519 -p ${bench.sshd.port} 127.0.0.1 | ssh-keygen -lf -`);
    // nothing else is asked of a host the bot will not talk to
    expect(() => rowOf(fleet.stdout, "host stale", "sudo")).toThrow(/no row/);
  });

  it("a key the host does not authorize: HOST_AUTH_FAILED, the key's path not printed", () => {
    const row = rowOf(fleet.stdout, "host wrong-key", "ssh");
    expect(row).toMatchObject({ mark: "✖", code: "HOST_AUTH_FAILED" });
    expect(row.saw).toContain("refused the bot's SSH key");
    expect(row.fix).toContain("authorized_keys");
    expect(fleet.stdout).not.toContain(wrongKey);
  });

  it("nothing listens at the host's SSH port: HOST_UNREACHABLE", () => {
    const row = rowOf(fleet.stdout, "host gone", "ssh");
    expect(row).toMatchObject({ mark: "✖", code: "HOST_UNREACHABLE" });
    expect(row.saw).toContain("is unreachable: ECONNREFUSED");
    expect(row.fix).toContain("that sshd listens on that address and port");
  });

  it("a host that never answers SSH is given up after its connect timeout, and stalls nobody else", () => {
    const row = rowOf(fleet.stdout, "host silent", "ssh");
    expect(row).toMatchObject({ mark: "✖", code: "HOST_UNREACHABLE" });
    expect(row.saw).toContain("did not complete an SSH handshake within 3 s");
  });

  it("sudo rules without the systemctl rule: HOST_SUDO_DENIED names each command sudo refuses", () => {
    const row = rowOf(fleet.stdout, "host sudo-partial", "sudo");
    expect(row.mark).toBe("✖");
    const unit = "sglang-sudo-partial.service";
    const bot = "sglang-modelswap-doctor-check-0000000.service";
    expect(row.saw).toBe(
      `sudo -n does not allow systemctl enable --now ${unit}; systemctl disable --now ${unit}; ` +
        `systemctl enable --now ${bot}; systemctl disable --now ${bot}`,
    );
    expect(row.code).toBe("HOST_SUDO_DENIED");
    expect(row.fix).toContain('the rules of docs/operations.md ("sudo: exactly the rights it needs")');
  });

  it("sudo rules without the fast stop (MODELSWAP_FAST_STOP): a warning, HOST_SUDO_PARTIAL, saying what the bot does instead", () => {
    const row = rowOf(fleet.stdout, "host sudo-no-kill", "sudo");
    const bot = "sglang-modelswap-doctor-check-0000000.service";
    expect(row).toMatchObject({ mark: "!", code: "HOST_SUDO_PARTIAL" });
    expect(row.saw).toBe(
      `sudo -n does not allow systemctl kill --signal=SIGKILL ${bot} (without it a rollback behind the front door stops a failed new unit by its engine's graceful drain)`,
    );
    // the full rules pass
    expect(rowOf(fleet.stdout, "host gpu-1", "sudo")).toMatchObject({ mark: "✔" });
  });

  it("no sudo rules at all: HOST_SUDO_DENIED, in sudo's own words", () => {
    expect(rowOf(fleet.stdout, "host sudo-none", "sudo")).toMatchObject({
      mark: "✖",
      saw: "sudo -n -l: sudo: a password is required",
      code: "HOST_SUDO_DENIED",
    });
  });

  it("no hf on the host: HOST_HF_MISSING", () => {
    const row = rowOf(fleet.stdout, "host no-hf", "hf");
    expect(row).toMatchObject({
      mark: "✖",
      saw: "no Hugging Face CLI (hf) on the host",
      code: "HOST_HF_MISSING",
    });
    expect(row.fix).toContain("pip install -U huggingface_hub");
  });

  it("an hf older than huggingface_hub 1.x: HOST_HF_TOO_OLD", () => {
    const row = rowOf(fleet.stdout, "host old-hf", "hf");
    expect(row).toMatchObject({
      mark: "✖",
      saw: "hf 0.34.4: modelswap needs huggingface_hub 1.x or newer",
      code: "HOST_HF_TOO_OLD",
    });
    expect(row.fix).toContain("pip install -U huggingface_hub");
  });

  it("a venv without its python: HOST_VENV_BROKEN", () => {
    const row = rowOf(fleet.stdout, "host no-venv", "venv");
    expect(row).toMatchObject({
      mark: "✖",
      saw: "/opt/no-such-venv/bin/python is missing or does not run",
      code: "HOST_VENV_BROKEN",
    });
    expect(row.fix).toContain("python3 -m venv /opt/no-such-venv");
  });

  it("an engine upstream the host cannot list: ENGINE_UPSTREAM_UNREACHABLE, with git's reason", () => {
    const row = rowOf(fleet.stdout, "host bad-upstream", "engine upstream");
    expect(row.mark).toBe("✖");
    expect(row.saw).toBe(
      `git ls-remote ${upstream()} failed on the host (exit 128): fatal: '${bench.dir}/no-such-upstream.git' does not appear to be a git repository`,
    );
    expect(row.code).toBe("ENGINE_UPSTREAM_UNREACHABLE");
    expect(row.fix).toContain("hosts[bad-upstream].engineUpstream");
  });

  it("a models directory that does not exist: MODELS_DIR_MISSING", () => {
    const row = rowOf(fleet.stdout, "host no-models", "models dir");
    expect(row).toMatchObject({
      mark: "✖",
      saw: "/srv/no-such-models does not exist",
      code: "MODELS_DIR_MISSING",
    });
    expect(row.fix).toMatch(
      /^create it for the bot's user: sudo install -d -o \S+ -g \S+ \/srv\/no-such-models/,
    );
  });

  it("a models directory the bot's user cannot write in: MODELS_DIR_NOT_WRITABLE", () => {
    const dir = bench.host("read-only").sim.modelsDir;
    const row = rowOf(fleet.stdout, "host read-only", "models dir");
    expect(row.mark).toBe("✖");
    expect(row.saw).toMatch(
      /cannot write in .*: mktemp: failed to create directory .*Operation not permitted$/,
    );
    expect(row.saw).toContain(dir);
    expect(row.code).toBe("MODELS_DIR_NOT_WRITABLE");
    expect(row.fix).toContain("sudo chown");
  });

  it("a models directory with 5 GiB free: MODELS_DIR_LOW_SPACE, a failure", () => {
    const row = rowOf(fleet.stdout, "host full-disk", "models dir");
    expect(row).toMatchObject({ mark: "✖", code: "MODELS_DIR_LOW_SPACE" });
    expect(row.saw).toMatch(/, 5\.0 GiB free$/);
    expect(row.fix).toContain("remove the ones you will not go back to");
  });

  it("a fence file that does not hold a number: FENCE_UNAVAILABLE, and how to clear it", () => {
    const row = rowOf(fleet.stdout, "host no-gpu", "fence");
    expect(row).toMatchObject({ mark: "✖", code: "FENCE_UNAVAILABLE" });
    expect(row.saw).toMatch(/\/\.modelswap\/fence does not hold a number$/);
    expect(row.fix).toMatch(/^remove \S+\/\.modelswap\/fence once no swap of no-gpu runs/);
  });

  it("a unit that runs while nothing answers on the configured port: SERVING_PORT_SILENT, naming the port", () => {
    const row = rowOf(fleet.stdout, "host wrong-port", "serving");
    expect(row).toMatchObject({ mark: "✖", code: "SERVING_PORT_SILENT" });
    expect(row.saw).toBe(
      `sglang-gpu-1.service is active, but /health_generate on port ${wrongPort} answered nothing`,
    );
    expect(row.fix).toMatch(
      /hosts\[wrong-port\]\.servingPort must be the port sglang-gpu-1\.service listens on/,
    );
  });

  it("a host with no such unit: SERVING_UNIT_MISSING, a warning (a first swap has nothing to stop)", () => {
    const row = rowOf(fleet.stdout, "host sudo-none", "serving");
    expect(row).toMatchObject({ mark: "!", code: "SERVING_UNIT_MISSING" });
    expect(row.saw).toMatch(/^no unit \S+ on the host: a first swap starts its model without stopping one$/);
  });

  it("nvidia-smi that cannot talk to the driver: GPU_UNAVAILABLE", () => {
    const row = rowOf(fleet.stdout, "host no-gpu", "gpus");
    expect(row.mark).toBe("✖");
    expect(row.saw).toContain(
      "nvidia-smi failed (exit 9): NVIDIA-SMI has failed because it couldn't communicate",
    );
    expect(row.code).toBe("GPU_UNAVAILABLE");
    expect(row.fix).toContain("the NVIDIA driver is not responding");
  });
});

describe("modelswap doctor checks a host's front door", () => {
  let out: Doctor;
  let path: string;
  beforeAll(async () => {
    path = await configWith("front-door", ["fd-1"], {}, (config) => {
      const hosts = config.hosts as HostEntry[];
      const base = hosts.find((h) => h.name === "fd-1")!;
      const variant = (name: string, edit: (frontDoor: Record<string, unknown>) => void) => {
        const host: HostEntry = { ...structuredClone(base), name };
        edit(host.frontDoor as Record<string, unknown>);
        hosts.push(host);
      };
      variant("fd-no-socket", (f) => {
        f.socket = `${bench.dir}/no-such-haproxy.sock`;
      });
      variant("fd-wrong-slot", (f) => {
        f.server = "green";
      });
    });
    out = await doctor(["--timeout", "20"], { MODELSWAP_CONFIG: path });
  }, 120_000);

  it("set up as docs/front-door.md says: both slots, blue at servingPort, and the hold's port refuses", () => {
    const row = rowOf(out.stdout, "host fd-1", "front door");
    expect(row.mark).toBe("✔");
    expect(row.saw).toMatch(
      /HAProxy backend sglang .*: blue serves port \d+ .*; hold holds requests up to 60 s; port \d+ refuses, so the hold holds/,
    );
  });

  it("a socket that is not there: FRONT_DOOR_SOCKET_MISSING, with where HAProxy's stats socket is set", () => {
    const row = rowOf(out.stdout, "host fd-no-socket", "front door");
    expect(row.mark).toBe("✖");
    expect(row.code).toBe("FRONT_DOOR_SOCKET_MISSING");
    expect(row.fix).toContain("stats socket");
  });

  it("a slot HAProxy does not have: FRONT_DOOR_MISCONFIGURED names the slots it has", () => {
    const row = rowOf(out.stdout, "host fd-wrong-slot", "front door");
    expect(row.mark).toBe("✖");
    expect(row.code).toBe("FRONT_DOOR_MISCONFIGURED");
    expect(row.saw).toMatch(/has no slot green \(it has blue, hold\)/);
    expect(out.code).toBe(1);
  });

  it("something listening on the hold's port: FRONT_DOOR_MISCONFIGURED, held requests would go to it", async () => {
    const holdPort = (await benchFrontDoor(bench, "fd-1").server("hold")).port;
    const listener = createServer(() => undefined);
    await new Promise<void>((resolve) => listener.listen(holdPort, "127.0.0.1", resolve));
    try {
      const again = await doctor(["--timeout", "20", "--host", "fd-1"], { MODELSWAP_CONFIG: path });
      const row = rowOf(again.stdout, "host fd-1", "front door");
      expect(row.mark).toBe("✖");
      expect(row.code).toBe("FRONT_DOOR_MISCONFIGURED");
      expect(row.saw).toContain(`something listens on port ${holdPort}, where slot hold points`);
      expect(again.code).toBe(1);
    } finally {
      await new Promise((resolve) => listener.close(resolve));
    }
  }, 120_000);
});

describe("roles hold only what they use (issue 30)", () => {
  it("the bot role alone starts without the hosts' SSH keys; a worker refuses to, naming the key; config check --role says which", async () => {
    const path = await configWith("no-keys", ["gpu-1"], {}, (config) => {
      for (const host of config.hosts as HostEntry[])
        if (host.ssh !== undefined) host.ssh.privateKeyPath = join(bench.dir, "no-such-key");
    });
    const saved = bench.env.MODELSWAP_CONFIG;
    bench.env.MODELSWAP_CONFIG = path;
    try {
      // the Slack-facing process: up and healthy with no key file at all
      const bot = await bench.spawnBot({ role: "bot" });
      const health = await fetch(`http://127.0.0.1:${bot.port}/healthz`);
      expect(health.status).toBe(200);
      await bot.kill("SIGTERM");
      const checked = await cliRun(["config", "check", "--role", "bot"], { MODELSWAP_CONFIG: path });
      expect(checked.code, checked.stdout).toBe(0);
      // a worker reaches the hosts: it needs the key, and says so before it starts
      const worker = await cliRun(["worker"], { MODELSWAP_CONFIG: path });
      expect(worker.code).toBe(1);
      expect(worker.stderr).toMatch(
        /hosts\[0\]\.ssh\.privateKeyPath: the SSH key of gpu-1 cannot be read by the bot/,
      );
      const both = await cliRun(["config", "check"], { MODELSWAP_CONFIG: path });
      expect(both.code).toBe(1);
      expect(both.stdout).toMatch(/the SSH key of gpu-1 cannot be read/);
      const wrong = await cliRun(["config", "check", "--role", "slack"], { MODELSWAP_CONFIG: path });
      expect(wrong).toMatchObject({ code: 2 });
      expect(wrong.stderr).toMatch(/--role is bot, worker or start/);
    } finally {
      bench.env.MODELSWAP_CONFIG = saved!;
    }
  }, 120_000);
});

/** The real `modelswap` with the bench's environment: exit code and output, whatever the code. */
async function cliRun(args: string[], env: Record<string, string>) {
  return await runModelswap(args, { ...bench.env, ...env }, 60_000);
}
