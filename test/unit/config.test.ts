import { writeFile } from "node:fs/promises";
import { join, posix } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { fileSchema } from "../../src/config/file-schema.ts";
import { hostEngine, hostEngines } from "../../src/config/host-engines.ts";
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

  it("takes recipe overrides, and refuses one that names the plan's own settings or a value with specials", async () => {
    const withOverrides = `${good(keyPath)}recipes:
  overrides:
    - recipe: nvfp4-sm120-sglang
      set: { fp4-gemm-backend: flashinfer_cutlass, disable-cuda-graph: true }
      remove: [tool-call-parser]
      reason: cudnn answers NaN on 0.5.7
`;
    const ok = await readConfig(env(await write("overrides.yaml", withOverrides)));
    expect(ok.problems).toEqual([]);
    expect(ok.config?.file.recipes.overrides[0]).toMatchObject({
      recipe: "nvfp4-sm120-sglang",
      set: { "fp4-gemm-backend": "flashinfer_cutlass", "disable-cuda-graph": true },
    });
    const bad = withOverrides
      .replace("fp4-gemm-backend: flashinfer_cutlass", "tp-size: '4'")
      .replace("remove: [tool-call-parser]", "remove: ['x; rm -rf /']");
    const { problems } = await readConfig(env(await write("bad-overrides.yaml", bad)));
    const paths = problems.map((p) => p.path).sort();
    expect(paths).toEqual(["recipes.overrides[0].remove[0]", "recipes.overrides[0].set.tp-size"].sort());
    expect(problems.find((p) => p.path.endsWith("tp-size"))?.what).toMatch(/the plan.s own/);

    // whether a repo's Python runs is the repo's files' and hub.remoteCodeOrgs' to say, never an override's
    const trust = withOverrides.replace("disable-cuda-graph: true", "trust-remote-code: true");
    const refused = await readConfig(env(await write("trust-overrides.yaml", trust)));
    expect(refused.problems.map((p) => [p.path, p.what, p.fix])).toEqual([
      [
        "recipes.overrides[0].set.trust-remote-code",
        "trust-remote-code is decided from the model repo's files and allowed per org (hub.remoteCodeOrgs), never set",
        "remove it; to let an org's models run their own code, add the org to hub.remoteCodeOrgs",
      ],
    ]);
  });

  it("takes bench.weightScale (1 unless set, for the demo and the bench only) and refuses anything but a whole number ≥ 1", async () => {
    const plain = await loadConfig(env(await write("no-bench.yaml", good(keyPath))));
    expect(plain.file.bench.weightScale).toBe(1);
    const scaled = await loadConfig(
      env(await write("bench.yaml", `${good(keyPath)}bench:\n  weightScale: 32768\n`)),
    );
    expect(scaled.file.bench.weightScale).toBe(32768);
    for (const given of ["0", "1.5", "lots"]) {
      const { problems } = await readConfig(
        env(await write("bad-bench.yaml", `${good(keyPath)}bench:\n  weightScale: ${given}\n`)),
      );
      expect(problems.map((p) => [p.path, p.what])).toEqual([
        ["bench.weightScale", "must be a whole number from 1 to 1000000000"],
      ]);
    }
  });

  it("takes hosts[].engine (sglang unless set) and hosts[].engines for more, refusing an unknown engine with what is accepted", async () => {
    const plain = await loadConfig(env(await write("no-engine.yaml", good(keyPath))));
    expect(plain.file.hosts.map((h) => h.engine)).toEqual(["sglang", "sglang"]);
    expect(hostEngines(plain.file.hosts[0]!).map((e) => [e.kind, e.upstream])).toEqual([
      ["sglang", "https://github.com/sgl-project/sglang.git"],
    ]);
    const both = good(keyPath).replace(
      "    currentUnit: sglang-qwen.service",
      "    currentUnit: sglang-qwen.service\n    engines:\n      vllm: { venv: /opt/vllm/.venv }",
    );
    const config = await loadConfig(env(await write("both.yaml", both)));
    expect(hostEngines(config.file.hosts[0]!).map((e) => [e.kind, e.upstream, e.compileKernels])).toEqual([
      ["sglang", "https://github.com/sgl-project/sglang.git", false],
      ["vllm", "https://github.com/vllm-project/vllm.git", false],
    ]);
    expect(hostEngine(config.file.hosts[1]!, "vllm")).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/has no vLLM \(it has sglang\)/),
    });
    const text = good(keyPath).replace(
      "    currentUnit: sglang-qwen.service",
      "    currentUnit: sglang-qwen.service\n    engine: tgi",
    );
    const { problems } = await readConfig(env(await write("tgi.yaml", text)));
    expect(problems.map((p) => p.path)).toEqual(["hosts[0].engine"]);
    expect(`${problems[0]?.what} ${problems[0]?.fix}`).toMatch(/sglang, vllm/);
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

/** Issue #13: every message names the key, what was given, what is accepted and an example. */
describe("config check messages", () => {
  const ZOD_TEXT =
    /Invalid input|Invalid option|expected \w+, received|Too (small|big)|received (null|undefined)/;
  const check = async (name: string, text: string, extraEnv: Record<string, string> = {}) => {
    const { problems } = await readConfig({ ...env(await write(name, text)), ...extraEnv });
    return { problems, byPath: Object.fromEntries(problems.map((p) => [p.path, p])) };
  };

  it("says an empty file is empty, rather than 'expected object, received null'", async () => {
    for (const text of ["", "# only a comment\n"]) {
      const { problems } = await check("empty.yaml", text);
      expect(problems).toHaveLength(1);
      expect(problems[0]?.what).toMatch(/^the file is empty: .*empty\.yaml$/);
      expect(problems[0]?.fix).toContain("modelswap.example.yaml");
    }
  });

  it("points a missing file at modelswap.example.yaml, where the example lives", async () => {
    const { problems } = await readConfig(env(join(dir.path, "nope.yaml")));
    expect(problems[0]?.fix).toContain("modelswap.example.yaml");
    expect(problems[0]?.fix).not.toContain("README.md");
  });

  it("names a wrong type with what was given, what is accepted and an example", async () => {
    const { byPath } = await check(
      "types.yaml",
      `${good(keyPath)}approvals: { allowSelfApproval: "yes" }\nhealth: { failureThreshold: 2.5, intervalSeconds: 0.1 }\n`,
    );
    const self = byPath["approvals.allowSelfApproval"];
    expect(self?.what).toBe("must be true or false");
    expect(self?.given).toBe('"yes" (text)');
    expect(self?.fix).toContain("e.g. allowSelfApproval: false");
    expect(byPath["health.failureThreshold"]).toMatchObject({
      what: "must be a whole number from 1 to 100",
      given: "2.5",
      fix: expect.stringContaining("e.g. failureThreshold: 3"),
    });
    expect(byPath["health.intervalSeconds"]).toMatchObject({
      what: "must be a number from 0.5 to 3600",
      given: "0.1",
    });
  });

  it("names the accepted host key types for a wrong hostKeyType", async () => {
    const text = good(keyPath).replace(
      `hostKeySha256: SHA256:${"a".repeat(43)}`,
      `hostKeySha256: SHA256:${"a".repeat(43)}\n      hostKeyType: ED25519`,
    );
    const { byPath } = await check("key-type.yaml", text);
    const problem = byPath["hosts[0].ssh.hostKeyType"];
    expect(problem?.what).toMatch(/ed25519, ecdsa,? (or )?rsa/);
    expect(problem?.given).toBe('"ED25519"');
    expect(problem?.fix).toContain("hostKeyType: ed25519");
  });

  it("says a missing section is not set, with an example, rather than 'expected object, received undefined'", async () => {
    const text = good(keyPath).replace("approvers:\n  users: [U0BOB0001]\n", "");
    const { byPath } = await check("noapprovers.yaml", text);
    expect(byPath.approvers?.what).toBe("approvers is not set");
    expect(byPath.approvers?.given).toBeUndefined();
    expect(byPath.approvers?.fix).toMatch(/e\.g\./);
  });

  it("tells a wrong type apart from a missing key when the schema has its own message", async () => {
    const text = good(keyPath).replace(/hosts:[\s\S]*/, "hosts: { name: gpu-1 }\n");
    const { byPath } = await check("hostsmap.yaml", text);
    expect(byPath.hosts?.what).toBe("hosts must be a list");
    expect(byPath.hosts?.given).toBe("a mapping (name)");
    expect(byPath.hosts?.fix).toContain("list at least one host under hosts:");
  });

  it("offers 'did you mean' for a misspelt key, from the keys known at that level", async () => {
    const text = `${good(keyPath)}helth: { intervalSeconds: 5 }\n`.replace(
      "currentUnit: sglang-qwen",
      "curentUnit: sglang-qwen",
    );
    const { byPath } = await check("typo.yaml", text);
    expect(byPath.helth?.what).toBe("unknown setting: did you mean health?");
    expect(byPath.helth?.fix).toContain("rename helth to health");
    expect(byPath["hosts[0].curentUnit"]?.what).toBe("unknown setting: did you mean currentUnit?");
    const far = await check("far.yaml", `${good(keyPath)}zzz: 1\n`);
    expect(far.byPath.zzz?.what).toBe("unknown setting");
    expect(far.byPath.zzz?.fix).toMatch(/the settings here are: slack, requesters, .*hosts/);
  });

  it("gives a YAML error's position once", async () => {
    const { problems } = await check("syntax2.yaml", "slack:\n  channel: [C1\n");
    expect(problems).toHaveLength(1);
    const [p] = problems;
    expect(p?.path).toMatch(/^line \d+, column \d+$/);
    expect(`${p?.path} ${p?.what}`.match(/line \d+/g)).toHaveLength(1);
    expect(p?.what).not.toMatch(/:$/);
  });

  it("reports the cross-field problems together with the others, not a round later", async () => {
    const text = good(keyPath)
      .replace("name: box", "name: gpu-1")
      .replace("servingPort: 30001", "servingPort: fast");
    const { byPath } = await check("rounds.yaml", text);
    expect(Object.keys(byPath).sort()).toEqual(["hosts[1].name", "hosts[1].servingPort"]);
    expect(byPath["hosts[1].name"]?.what).toMatch(/used twice/);
  });

  it("reports every environment problem in one run, beside the file's", async () => {
    const { byPath } = await check("envrounds.yaml", `${good(keyPath)}helth: {}\n`, {
      SLACK_BOT_TOKEN: "",
      SLACK_SIGNING_SECRET: "",
      PORT: "http",
      REDIS_SENTINEL_MASTER: "mymaster",
    });
    expect(Object.keys(byPath).sort()).toEqual(
      ["PORT", "REDIS_SENTINELS", "SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "helth"].sort(),
    );
    expect(byPath.PORT?.given).toBe('"http"');
  });

  it("never shows a secret-looking value as what was given", async () => {
    const text = good(keyPath).replace(
      "currentUnit: sglang-qwen.service",
      "currentUnit: xoxb-123-secretvalue",
    );
    const { problems } = await check("secretgiven.yaml", text, { SLACK_BOT_TOKEN: "xoxp-user-token-9999" });
    const out = formatProblems(problems);
    expect(out).not.toContain("secretvalue");
    expect(out).not.toContain("user-token-9999");
    expect(problems.find((p) => p.path === "SLACK_BOT_TOKEN")?.given).toMatch(/not shown/);
  });

  it("never falls back to zod's own text, and every problem has a fix with an example or a command", async () => {
    const texts = [
      "",
      "- a\n- b\n",
      "just text\n",
      good(keyPath).replace("users: [U0ALICE01]", "users: U0ALICE01"),
      good(keyPath).replace("slack:\n  channel: C0SWAPS01\n", "slack: C0SWAPS01\n"),
      `${good(keyPath)}engine: { unlistedRefs: maybe, allowedRefs: { branches: main } }\n`,
      `${good(keyPath)}swaps: { pollSeconds: fast, downloadRetries: -1 }\nrecords: []\n`,
      good(keyPath).replace("address: 10.0.0.5", "address: 10.0.0.5\n      port: '22'"),
      good(keyPath).replace("    local: true\n", "    local: yes please\n"),
    ];
    for (const [i, text] of texts.entries()) {
      const { problems } = await check(`sweep${i}.yaml`, text);
      expect(problems.length, text).toBeGreaterThan(0);
      for (const p of problems) {
        expect(`${p.path}: ${p.what} ${p.given ?? ""} ${p.fix}`).not.toMatch(ZOD_TEXT);
        expect(p.fix, `${p.path}: ${p.what}`).toMatch(/e\.g\.|like|example|ssh-keygen|remove|rename/);
      }
    }
  });
});
