import { readFile, writeFile } from "node:fs/promises";
import { type AddressInfo, createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeModel, startSimHub } from "../../testbench/hub/index.ts";
import { runModelswap } from "../support/modelswap-cli.ts";
import { tempDir } from "../support/tmp.ts";

/** Runs the real `modelswap` command; resolves with its exit code and output, whatever the code. */
async function modelswap(args: string[], env: Record<string, string> = {}) {
  return await runModelswap(args, env, 30_000);
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
    const check = () =>
      modelswap(["config", "check", path], { SLACK_BOT_TOKEN: "xoxb-1-a", SLACK_APP_TOKEN: "xapp-1-b" });
    const result = await check();
    expect(result).toMatchObject({ code: 0 });
    expect(result.stdout).toContain("is valid: 1 host(s): gpu-1 (ssh modelswap@10.0.0.5:22)");
    expect(result.stdout).not.toContain("weightScale");

    // the demo's and the bench's key, set in a config: valid, and said to be no production setting
    await writeFile(path, `${await readFile(path, "utf8")}\nbench: { weightScale: 32768 }\n`);
    const scaled = await check();
    expect(scaled).toMatchObject({ code: 0 });
    expect(scaled.stdout).toContain(
      "⚠ bench.weightScale is 32768: plans multiply the weight files' sizes by 32768, as the demo and the test bench need; in production leave it out (1)",
    );
    expect(scaled.stdout).not.toContain("slackRateScale");

    // the bench's Slack pace: as valid, and as loudly no production setting
    await writeFile(
      path,
      (await readFile(path, "utf8")).replace("weightScale: 32768", "slackRateScale: 100"),
    );
    const paced = await check();
    expect(paced).toMatchObject({ code: 0 });
    expect(paced.stdout).toContain(
      "⚠ bench.slackRateScale is 100: the bot calls Slack 100 times as often as Slack's rate limits allow",
    );
    expect(paced.stdout).not.toContain("weightScale");
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

describe("modelswap recipes (issue 28 §1)", () => {
  const FIXTURES = new URL("../fixtures/model-configs/", import.meta.url).pathname;

  it("lists the catalogue: each recipe with what it matches and sets, and where each format runs", async () => {
    const result = await modelswap(["recipes"]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      /^\d+ recipes \(\d+ shipped in src\/plan\/catalogue\.yaml\), applied in this order:/,
    );
    expect(result.stdout).toContain("  nvfp4-sm120-sglang-moe: NVFP4 MoE on SM120 with SGLang\n");
    expect(result.stdout).toContain("    sets: --tool-call-parser gpt-oss (sglang) / openai (vllm)");
    expect(result.stdout).toMatch(/nvfp4 · vLLM · 8\.0-9\.x: weight-only FP4 through the Marlin kernel/);
  });

  it("explains which recipes a model gets on a GPU and engine, and why the others do not apply", async () => {
    const result = await modelswap([
      "recipes",
      `${FIXTURES}nvidia--Llama-3.3-70B-Instruct-FP4`,
      "--gpu",
      "sm_120",
      "--gpu=9.0",
      "--engine",
      "sglang",
    ]);
    expect(result.code, result.stderr).toBe(0);
    const out = result.stdout;
    expect(out).toContain("nvidia/Llama-3.3-70B-Instruct-FP4: LlamaForCausalLM (model_type llama), dense\n");
    expect(out).toContain(
      "  weights: ModelOpt NVFP4 (4-bit float weights and activations, FP8 scales per group of 16) (read from hf_quant_config.json)",
    );
    expect(out).toContain("SGLang on sm_120 (sm_120):\n");
    expect(out).toMatch(
      / {2}✓ modelopt-fp4 \(ModelOpt NVFP4 checkpoint\): format nvfp4 in nvfp4; quantization method modelopt in modelopt\n/,
    );
    expect(out).toContain(
      "  · nvfp4-sm120-sglang-moe: not this model: a mixture-of-experts model is false\n",
    );
    expect(out).toMatch(
      / {4}--fp4-gemm-backend flashinfer_cudnn {2}\(recipe nvfp4-sm120-sglang\): the default FP4 GEMM produces NaN/,
    );
    expect(out).toMatch(/ {4}--tool-call-parser llama3 {2}\(recipe llama3\)/);
    // on Hopper SGLang cannot: the refusal names the engine that can
    expect(out).toMatch(
      /SGLang on sm_90 \(sm_90\):\n {2}✗ NVFP4 .* does not run on sm_90 .* with SGLang.*\n {4}fix: vLLM runs it on these GPUs/,
    );
  });

  it("reads a Hub model through HF_ENDPOINT, as resolve does", async () => {
    const hub = await startSimHub();
    try {
      const model = hub.addModel(makeModel("qwen3.5-moe-nvfp4", { sizes: "claimed" }));
      const result = await modelswap(["recipes", model.id, "--gpu", "12.0", "--engine", "vllm"], {
        HF_ENDPOINT: hub.url,
      });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain(
        `${model.id}: Qwen3_5MoeForConditionalGeneration (model_type qwen3_5_moe / qwen3_5_moe_text), MoE of 512 experts\n`,
      );
      expect(result.stdout).toMatch(/ {4}VLLM_USE_FLASHINFER_MOE_FP4=1 {2}\(recipe nvfp4-sm120-vllm-moe\)/);
      expect(result.stdout).toContain(
        "    note: Hierarchical KV cache (recipe qwen3.5): vLLM has none; off.\n",
      );
    } finally {
      await hub.stop();
    }
  });

  it("a model no recipe names: engine defaults, said in one line", async () => {
    const result = await modelswap(["recipes", `${FIXTURES}Qwen--Qwen2.5-72B-Instruct-AWQ`, "--gpu", "12.0"]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(
      "  → no known-good recipe names this model: engine defaults; the sanity gate decides\n",
    );
    expect(result.stdout).toContain("vLLM on sm_120 (sm_120):\n");
  });

  it("refuses what it cannot read, saying what is accepted, and exits non-zero", async () => {
    const gpu = await modelswap(["recipes", `${FIXTURES}openai--gpt-oss-120b`, "--gpu", "blackwell"]);
    expect(gpu).toMatchObject({ code: 2, stdout: "" });
    expect(gpu.stderr).toContain("--gpu takes a compute capability like 12.0 or sm_120, not 'blackwell'");
    const engine = await modelswap(["recipes", "--engine", "tgi"]);
    expect(engine.code).toBe(2);
    expect(engine.stderr).toContain("--engine takes sglang or vllm, not 'tgi'");
    const model = await modelswap(["recipes", "not a model; rm -rf /"]);
    expect(model.code).toBe(1);
    expect(model.stderr).toContain(
      "is neither a directory with a config.json nor a Hugging Face model reference",
    );
  });
});
