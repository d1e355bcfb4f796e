import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../testbench/free-port.ts";
import { shimScriptPath } from "../../testbench/gpu-host/index.ts";
import { installVllm, uninstallVllm } from "../../testbench/gpu-host/vllm-install.ts";
import {
  DENSE_CONFIG,
  MOE_CONFIG,
  type Proc,
  portOpen,
  running,
  spawnProc,
  stopProc,
  summaryRows,
  writeModel,
} from "../support/sim-engine-process.ts";
import { tempDir } from "../support/tmp.ts";

// The simulated vLLM 0.18 (testbench/gpu-host/VLLM.md): `<venv>/bin/vllm serve` as a real process with
// real HTTP, against a sandbox of its own with vLLM installed in the venv.

interface Sandbox {
  root: string;
  vllm: string;
  remove: () => Promise<void>;
}

async function makeSandbox(gpus: string, faults: Record<string, unknown> = {}): Promise<Sandbox> {
  const dir = await tempDir("vllm-sim-");
  await mkdir(join(dir.path, "state", "gpu-usage"), { recursive: true });
  await writeFile(join(dir.path, "state", "config.json"), JSON.stringify({ name: "gpu-test", gpus }));
  await writeFile(join(dir.path, "state", "faults.json"), JSON.stringify(faults));
  await installVllm(dir.path);
  return {
    root: dir.path,
    vllm: join(dir.path, "opt", "venvs", "sglang", "bin", "vllm"),
    remove: dir.remove,
  };
}

const vllm = (sb: Sandbox, args: string[], env: Record<string, string> = {}) => spawnProc(sb.vllm, args, env);
const python = (sb: Sandbox, args: string[]) =>
  spawnProc(process.execPath, [shimScriptPath("python"), ...args], { MODELSWAP_SANDBOX: sb.root });

async function run(p: Proc) {
  const { code } = await p.exited;
  return { code, output: p.output() };
}

async function startServer(
  sb: Sandbox,
  model: string,
  extra: string[] = [],
  env: Record<string, string> = {},
) {
  const port = await freePort();
  const proc = vllm(sb, ["serve", model, "--port", String(port), ...extra], env);
  return { port, proc };
}

async function get(port: number, path: string) {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: res.status, text: await res.text() };
}

async function post(port: number, path: string, body: unknown) {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  // biome-ignore lint/suspicious/noExplicitAny: the tests read the bodies field by field
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = null;
  }
  return { status: res.status, text, json };
}

async function usageOf(
  sb: Sandbox,
  pid: number | undefined,
): Promise<{ gpus: number[]; memMiB: number } | null> {
  const file = join(sb.root, "state", "gpu-usage", `${pid}.json`);
  return existsSync(file) ? JSON.parse(await readFile(file, "utf8")) : null;
}

afterAll(() => {
  for (const child of running) child.kill("SIGKILL");
});

describe("simulated vLLM command line", () => {
  let sb: Sandbox;
  let model: string;
  beforeAll(async () => {
    sb = await makeSandbox("h200-1gpu", { vllm: { loadSeconds: 0.1 } });
    model = await writeModel(sb.root, "dense", DENSE_CONFIG);
  });
  afterAll(async () => {
    await sb?.remove();
  });

  it("`vllm serve --help` is the short help: the config groups, no option lines", async () => {
    const r = await run(vllm(sb, ["serve", "--help"]));
    expect(r.code).toBe(0);
    expect(r.output).toMatch(/^usage: vllm serve \[model_tag\] \[options\]\n/);
    const groups = r.output.split("Config Groups:\n")[1] ?? "";
    for (const g of [
      "Frontend",
      "ModelConfig",
      "ParallelConfig",
      "CacheConfig",
      "SchedulerConfig",
      "VllmConfig",
    ])
      expect(groups, g).toMatch(new RegExp(`^  ${g} +\\S`, "m"));
    expect(r.output).not.toMatch(/^ {2}--/m);
    expect(r.output).toContain("For full list:            vllm serve --help=all");
  });

  it("`--help=all` lists every option with argparse's layout; `--help=<Group>` one group", async () => {
    const r = await run(vllm(sb, ["serve", "--help=all"]));
    expect(r.code).toBe(0);
    const optionLines = r.output.split("\n").filter((l) => /^ {2}-/.test(l));
    const flags = new Set(
      optionLines.flatMap((l) =>
        [...l.trimStart().matchAll(/(?:^|, )(-{1,2}[a-z0-9][\w-]*)/g)].map((m) => m[1]),
      ),
    );
    for (const flag of [
      "--host",
      "--port",
      "--served-model-name",
      "--tensor-parallel-size",
      "-tp",
      "--gpu-memory-utilization",
      "--max-model-len",
      "--quantization",
      "--kv-cache-dtype",
      "--enable-sleep-mode",
      "--shutdown-timeout",
      "--trust-remote-code",
      "--enable-auto-tool-choice",
      "--tool-call-parser",
      "--reasoning-parser",
      "--enable-log-requests",
      "--disable-log-requests",
    ])
      expect(flags.has(flag), flag).toBe(true);
    expect(r.output).toContain("  --tensor-parallel-size TENSOR_PARALLEL_SIZE, -tp TENSOR_PARALLEL_SIZE\n");
    expect(r.output).toContain(
      "  --kv-cache-dtype {auto,bfloat16,fp8,fp8_ds_mla,fp8_e4m3,fp8_e5m2,fp8_inc}\n",
    );
    expect(r.output).toContain("  --enable-sleep-mode, --no-enable-sleep-mode\n");
    expect(r.output).toMatch(/--gpu-memory-utilization GPU_MEMORY_UTILIZATION\n[\s\S]*?\(default: 0\.9\)/);
    const cache = await run(vllm(sb, ["serve", "--help=cacheconfig"]));
    expect(cache.output).toMatch(/^CacheConfig:\n {2}Configuration for the KV cache\./);
    expect(cache.output).toContain("--gpu-memory-utilization");
    expect(cache.output).not.toContain("--port");
  });

  it("an unknown flag is argparse's error from the top parser, exit 2; a bad value the serve parser's", async () => {
    const r = await run(vllm(sb, ["serve", model, "--foo", "bar"]));
    expect(r.code).toBe(2);
    expect(r.output).toBe(
      "usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ...\nvllm: error: unrecognized arguments: --foo bar\n",
    );
    const bad = await run(vllm(sb, ["serve", model, "--kv-cache-dtype", "fp4"]));
    expect(bad.code).toBe(2);
    expect(bad.output).toContain(
      "usage: vllm serve [model_tag] [options]\nvllm serve: error: argument --kv-cache-dtype: invalid choice: 'fp4' (choose from 'auto', 'bfloat16',",
    );
  });

  it("`vllm --version`, `import vllm` and `python -m vllm.entrypoints.openai.api_server` follow the install", async () => {
    expect(await run(vllm(sb, ["--version"]))).toEqual({ code: 0, output: "0.18.0\n" });
    expect(await run(python(sb, ["-c", "import vllm; print(vllm.__version__)"]))).toEqual({
      code: 0,
      output: "0.18.0\n",
    });
    const help = await run(python(sb, ["-m", "vllm.entrypoints.openai.api_server", "--help"]));
    expect(help.code).toBe(0);
    expect(help.output).toContain("Config Groups:");
    await uninstallVllm(sb.root);
    try {
      const missing = await run(python(sb, ["-c", "import vllm"]));
      expect(missing.code).toBe(1);
      expect(missing.output).toContain("ModuleNotFoundError: No module named 'vllm'");
      const mod = await run(python(sb, ["-m", "vllm.entrypoints.openai.api_server", "--model", model]));
      expect(mod.code).toBe(1);
      expect(mod.output).toContain(
        "Error while finding module specification for 'vllm.entrypoints.openai.api_server' (ModuleNotFoundError: No module named 'vllm')",
      );
      expect(existsSync(sb.vllm)).toBe(false);
    } finally {
      await installVllm(sb.root);
    }
  });
});

describe("simulated vLLM server: dense model on 1x H200", () => {
  let sb: Sandbox;
  let model: string;
  let port: number;
  let proc: Proc;

  beforeAll(async () => {
    sb = await makeSandbox("h200-1gpu", { vllm: { loadSeconds: 0.6, msPerToken: 1, ttftMs: 3 } });
    model = await writeModel(sb.root, "Qwen3-4B", DENSE_CONFIG);
    ({ port, proc } = await startServer(sb, model, ["--served-model-name", "qwen3-4b"]));
    // like vLLM, uvicorn listens only once the engine is up: connections are refused while loading
    await proc.waitFor(/Starting to load model/);
    expect(await portOpen(port)).toBe(false);
    await proc.waitFor(/Application startup complete\./);
  });
  afterAll(async () => {
    if (proc) await stopProc(proc);
    await sb?.remove();
  });

  it("logs vLLM's startup lines in order", () => {
    const order = [
      /\(APIServer pid=\d+\) INFO \d\d-\d\d \d\d:\d\d:\d\d \[api_server\.py:\d+\] vLLM API server version 0\.18\.0/,
      /\(EngineCore_DP0 pid=\d+\) INFO .* Initializing a V1 LLM engine \(v0\.18\.0\) with config: model='[^']+Qwen3-4B'/,
      /Loading weights took \d+\.\d\d seconds/,
      /Model loading took \d+\.\d{4} GiB memory and \d+\.\d{6} seconds/,
      /Available KV cache memory: \d+\.\d\d GiB/,
      /GPU KV cache size: [\d,]+ tokens/,
      /Maximum concurrency for 40,960 tokens per request: \d+\.\d\dx/,
      /Starting vLLM API server 0 on http:\/\/0\.0\.0\.0:\d+/,
      /\(APIServer pid=\d+\) INFO: {5}Application startup complete\./,
    ];
    let at = 0;
    const log = proc.output();
    for (const re of order) {
      const m = re.exec(log.slice(at));
      expect(m, `missing ${re} after offset ${at}`).not.toBeNull();
      at += (m?.index ?? 0) + (m?.[0].length ?? 0);
    }
  });

  it("/health answers 200 with an empty body; /v1/models lists the served name", async () => {
    expect(await get(port, "/health")).toEqual({ status: 200, text: "" });
    const models = JSON.parse((await get(port, "/v1/models")).text);
    expect(models).toMatchObject({
      object: "list",
      data: [{ id: "qwen3-4b", object: "model", owned_by: "vllm", root: model, max_model_len: 40960 }],
    });
    expect((await get(port, "/nope")).status).toBe(404);
  });

  it("/v1/completions and /v1/chat/completions answer with numeric logprobs; streaming ends in [DONE]", async () => {
    const c = await post(port, "/v1/completions", {
      model: "qwen3-4b",
      prompt: "The capital of France is",
      max_tokens: 8,
      temperature: 0,
      logprobs: 1,
    });
    expect(c.status).toBe(200);
    expect(c.json.id).toMatch(/^cmpl-[0-9a-f]{32}$/);
    expect(c.json.choices[0]).toMatchObject({ text: " Paris.", finish_reason: "stop", stop_reason: null });
    expect(
      c.json.choices[0].logprobs.token_logprobs.every((v: unknown) => typeof v === "number" && v < 0),
    ).toBe(true);
    const chat = await post(port, "/v1/chat/completions", {
      model: "qwen3-4b",
      messages: [{ role: "user", content: "What is the capital of France?" }],
      temperature: 0,
      logprobs: true,
    });
    expect(chat.json.choices[0].message.content).toBe("The capital of France is Paris.");
    expect(
      chat.json.choices[0].logprobs.content.every((t: { logprob: unknown }) => typeof t.logprob === "number"),
    ).toBe(true);
    const res = await fetch(`http://127.0.0.1:${port}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        prompt: "hello",
        max_tokens: 5,
        ignore_eos: true,
        stream: true,
        stream_options: { include_usage: true },
      }),
    });
    const events = (await res.text()).split("\n\n").filter((e) => e.startsWith("data: "));
    expect(events.at(-1)).toBe("data: [DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)));
    expect(chunks.at(-1).usage).toMatchObject({ completion_tokens: 5 });
    expect(chunks.at(-2).choices[0].finish_reason).toBe("length");
    const wrong = await post(port, "/v1/completions", { model: "other", prompt: "x" });
    expect(wrong.status).toBe(404);
    expect(wrong.json.error).toMatchObject({ type: "NotFoundError", code: 404 });
  });

  it("the fault nan (read per request): '!' tokens; logprobs stream as null, a non-streamed answer with logprobs is a 500", async () => {
    await writeFile(
      join(sb.root, "state", "faults.json"),
      JSON.stringify({ vllm: { mode: "nan", msPerToken: 1, ttftMs: 3 } }),
    );
    try {
      const plain = await post(port, "/v1/completions", {
        prompt: "The capital of France is",
        max_tokens: 6,
      });
      expect(plain.json.choices[0]).toMatchObject({ text: "!!!!!!", finish_reason: "length" });
      const withLogprobs = await post(port, "/v1/chat/completions", {
        messages: [{ role: "user", content: "hi" }],
        max_tokens: 4,
        logprobs: true,
      });
      expect(withLogprobs).toMatchObject({ status: 500, text: "Internal Server Error" });
      expect(proc.output()).toContain("ValueError: Out of range float values are not JSON compliant");
      const res = await fetch(`http://127.0.0.1:${port}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ prompt: "x", max_tokens: 3, logprobs: 1, stream: true }),
      });
      const first = JSON.parse((await res.text()).split("\n\n")[0]?.slice(6) ?? "{}");
      expect(first.choices[0].text).toBe("!");
      expect(first.choices[0].logprobs.token_logprobs).toEqual([null]);
      expect(await get(port, "/health")).toEqual({ status: 200, text: "" });
    } finally {
      await writeFile(
        join(sb.root, "state", "faults.json"),
        JSON.stringify({ vllm: { msPerToken: 1, ttftMs: 3 } }),
      );
    }
  });

  it("registers its GPU memory (util × total + context + graphs) and nvidia-smi shows it", async () => {
    const usage = await usageOf(sb, proc.child.pid);
    expect(usage?.gpus).toEqual([0]);
    expect(usage?.memMiB).toBeGreaterThan(0.9 * 139_000);
    expect(usage?.memMiB).toBeLessThan(143_771);
    const smi = await run(
      spawnProc(
        process.execPath,
        [
          shimScriptPath("nvidia-smi"),
          "--query-compute-apps=pid,used_memory",
          "--format=csv,noheader,nounits",
        ],
        {
          MODELSWAP_SANDBOX: sb.root,
        },
      ),
    );
    expect(smi.output).toContain(`${proc.child.pid}, ${usage?.memMiB}`);
    // a second server on the same GPU finds less free memory than 0.9 × total (gpu_worker.py init_device)
    const second = await startServer(sb, model);
    const r = await run(second.proc);
    expect(r.code).toBe(1);
    expect(r.output).toMatch(
      /ValueError: Free memory on device cuda:0 \(\d+\.\d+\/\d+\.\d+ GiB\) on startup is less than desired GPU memory utilization \(0\.9, \d+\.\d+ GiB\)\. Decrease GPU memory utilization or reduce GPU memory used by other processes\./,
    );
    expect(r.output).toContain(
      "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    );
  });

  it("/metrics has vllm:num_requests_running and vllm:num_requests_waiting; /sleep is 404 without VLLM_SERVER_DEV_MODE", async () => {
    const metrics = (await get(port, "/metrics")).text;
    expect(metrics).toMatch(/^vllm:num_requests_running\{engine="0",model_name="qwen3-4b"\} \d+\.\d$/m);
    expect(metrics).toMatch(/^vllm:num_requests_waiting\{engine="0",model_name="qwen3-4b"\} \d+\.\d$/m);
    expect((await post(port, "/sleep?level=1", {})).status).toBe(404);
    expect((await get(port, "/is_sleeping")).status).toBe(404);
  });

  it("`vllm bench serve` measures it and prints vLLM's summary", async () => {
    const r = await run(
      vllm(sb, [
        "bench",
        "serve",
        "--backend",
        "vllm",
        "--base-url",
        `http://127.0.0.1:${port}`,
        "--model",
        "qwen3-4b",
        "--dataset-name",
        "random",
        "--random-input-len",
        "64",
        "--random-output-len",
        "16",
        "--num-prompts",
        "12",
        "--max-concurrency",
        "4",
        "--ignore-eos",
        "--disable-tqdm",
      ]),
    );
    expect(r.code, r.output).toBe(0);
    const values = summaryRows(r.output);
    expect(values.get("Successful requests:")).toBe("12");
    expect(values.get("Failed requests:")).toBe("0");
    expect(values.get("Maximum request concurrency:")).toBe("4");
    expect(values.get("Total input tokens:")).toBe(String(12 * 64));
    expect(values.get("Total generated tokens:")).toBe(String(12 * 16));
    expect(Number(values.get("Benchmark duration (s):"))).toBeGreaterThan(0);
    expect(Number(values.get("Request throughput (req/s):"))).toBeGreaterThan(0);
    expect(Number(values.get("Output token throughput (tok/s):"))).toBeGreaterThan(0);
    expect(Number(values.get("Peak concurrent requests:"))).toBeLessThanOrEqual(4);
    const ttft = Number(values.get("Mean TTFT (ms):"));
    const tpot = Number(values.get("Mean TPOT (ms):"));
    expect(ttft).toBeGreaterThan(0);
    expect(tpot).toBeGreaterThan(0.5);
    expect(tpot).toBeLessThan(50);
    for (const label of [
      "Median TTFT (ms):",
      "P99 TTFT (ms):",
      "Median TPOT (ms):",
      "P99 TPOT (ms):",
      "Mean ITL (ms):",
      "Median ITL (ms):",
      "P99 ITL (ms):",
    ])
      expect(values.has(label), label).toBe(true);
    expect([...values.keys()].slice(0, 3)).toEqual([
      "Successful requests:",
      "Failed requests:",
      "Maximum request concurrency:",
    ]);
  });

  it("SIGTERM without --shutdown-timeout aborts the in-flight request and frees the GPU", async () => {
    const pid = proc.child.pid;
    const inflight = fetch(`http://127.0.0.1:${port}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: "Tell me a story", max_tokens: 2000, ignore_eos: true, stream: true }),
    }).then((res) => res.text());
    await new Promise((r) => setTimeout(r, 150));
    proc.child.kill("SIGTERM");
    await expect(inflight).rejects.toThrow();
    expect((await proc.exited).code).toBe(0);
    expect(proc.output()).toContain("Shutting down FastAPI HTTP server.");
    expect(await usageOf(sb, pid)).toBeNull();
  });
});

describe("simulated vLLM: --shutdown-timeout drain and sleep mode", () => {
  let sb: Sandbox;
  let model: string;
  beforeAll(async () => {
    sb = await makeSandbox("8x-h200", { vllm: { loadSeconds: 0.1, msPerToken: 4, ttftMs: 3 } });
    model = await writeModel(sb.root, "dense", DENSE_CONFIG);
  });
  afterAll(async () => {
    await sb?.remove();
  });

  it("with --shutdown-timeout N, SIGTERM refuses new requests (503) and lets the in-flight one finish", async () => {
    const { port, proc } = await startServer(sb, model, ["--shutdown-timeout", "10"]);
    await proc.waitFor(/Application startup complete\./);
    const inflight = post(port, "/v1/completions", {
      prompt: "Tell me a story",
      max_tokens: 150,
      ignore_eos: true,
    });
    await new Promise((r) => setTimeout(r, 150));
    proc.child.kill("SIGTERM");
    await proc.waitFor(/Waiting up to 10 seconds/);
    const refused = await post(port, "/v1/completions", { prompt: "x", max_tokens: 1 });
    expect(refused.status).toBe(503);
    expect((await get(port, "/health")).status).toBe(503);
    const done = await inflight;
    expect(done.status).toBe(200);
    expect(done.json.usage.completion_tokens).toBe(150);
    expect((await proc.exited).code).toBe(0);
  });

  it("sleep mode (VLLM_SERVER_DEV_MODE=1 and --enable-sleep-mode): level 1 frees the GPU memory, /wake_up restores it", async () => {
    const { port, proc } = await startServer(sb, model, ["--enable-sleep-mode", "-tp", "2"], {
      VLLM_SERVER_DEV_MODE: "1",
      CUDA_VISIBLE_DEVICES: "4,5",
    });
    await proc.waitFor(/Application startup complete\./);
    expect(proc.output()).toContain("SECURITY WARNING: Development endpoints are enabled!");
    const awake = await usageOf(sb, proc.child.pid);
    expect(awake?.gpus).toEqual([4, 5]);
    expect(awake?.memMiB).toBeGreaterThan(100_000);
    expect(JSON.parse((await get(port, "/is_sleeping")).text)).toEqual({ is_sleeping: false });
    expect((await post(port, "/sleep?level=1", {})).status).toBe(200);
    expect(JSON.parse((await get(port, "/is_sleeping")).text)).toEqual({ is_sleeping: true });
    // a sleeping engine still holds about 7 GB per GPU (vllm#47654)
    expect((await usageOf(sb, proc.child.pid))?.memMiB).toBe(Math.round((7e9 / 1024 ** 3) * 1024));
    expect(proc.output()).toMatch(/Sleep mode freed \d+\.\d\d GiB memory/);
    expect((await get(port, "/health")).status).toBe(200);
    expect((await post(port, "/wake_up", {})).status).toBe(200);
    expect((await usageOf(sb, proc.child.pid))?.memMiB).toBe(awake?.memMiB);
    const c = await post(port, "/v1/completions", { prompt: "2+2=", max_tokens: 4, temperature: 0 });
    expect(c.json.choices[0].text.trim()).toBe("4");
    expect(await stopProc(proc)).toBe(0);
  });
});

describe("simulated vLLM: NVFP4 on sm_120", () => {
  let sb: Sandbox;
  let model: string;
  beforeAll(async () => {
    sb = await makeSandbox("8x-rtx-pro-6000-blackwell", {
      vllm: { loadSeconds: 0.1, msPerToken: 1, ttftMs: 2 },
    });
    model = await writeModel(sb.root, "Qwen3-MoE-NVFP4", MOE_CONFIG, true);
  });
  afterAll(async () => {
    await sb?.remove();
  });

  it("without the FlashInfer FP4 MoE switches: healthy, but '!' output", async () => {
    const { port, proc } = await startServer(sb, model, ["-tp", "4", "--max-model-len", "32768"]);
    await proc.waitFor(/Application startup complete\./);
    expect(await get(port, "/health")).toEqual({ status: 200, text: "" });
    const c = await post(port, "/v1/completions", { prompt: "The capital of France is", max_tokens: 8 });
    expect(c.json.choices[0].text).toBe("!!!!!!!!");
    expect(await stopProc(proc)).toBe(0);
  });

  it("with VLLM_USE_FLASHINFER_MOE_FP4=1 and VLLM_FLASHINFER_MOE_BACKEND=throughput: sane output", async () => {
    const { port, proc } = await startServer(sb, model, ["-tp", "4", "--max-model-len", "32768"], {
      VLLM_USE_FLASHINFER_MOE_FP4: "1",
      VLLM_FLASHINFER_MOE_BACKEND: "throughput",
    });
    await proc.waitFor(/Application startup complete\./);
    const c = await post(port, "/v1/completions", {
      prompt: "The capital of France is",
      max_tokens: 8,
      logprobs: 1,
    });
    expect(c.json.choices[0].text).toBe(" Paris.");
    expect(await stopProc(proc)).toBe(0);
  });
});

describe("simulated vLLM: startup failures", () => {
  let sb: Sandbox;
  let model: string;
  beforeAll(async () => {
    sb = await makeSandbox("h200-1gpu");
    model = await writeModel(sb.root, "dense", DENSE_CONFIG);
  });
  afterAll(async () => {
    await sb?.remove();
  });

  async function withFaults(faults: Record<string, unknown>) {
    await writeFile(join(sb.root, "state", "faults.json"), JSON.stringify(faults));
  }

  it("crash-on-start: the engine core's traceback, then the API server's 'Engine core initialization failed', exit 1", async () => {
    await withFaults({ vllm: { mode: "crash-on-start", loadSeconds: 0.1 } });
    const r = await run((await startServer(sb, model)).proc);
    expect(r.code).toBe(1);
    expect(r.output).toMatch(
      /\(EngineCore_DP0 pid=\d+\) ERROR .*\[core\.py:\d+\] EngineCore failed to start\./,
    );
    expect(r.output).toMatch(/\(EngineCore_DP0 pid=\d+\) Traceback \(most recent call last\):/);
    expect(r.output).toMatch(/\(APIServer pid=\d+\) Traceback \(most recent call last\):/);
    expect(r.output).toMatch(
      /\(APIServer pid=\d+\) RuntimeError: Engine core initialization failed\. See root cause above\. Failed core proc\(s\): \{\}\n/,
    );
  });

  it("a tokenizer of the repo's own (tokenizer_config.json auto_map) refuses to start without --trust-remote-code", async () => {
    await withFaults({ vllm: { loadSeconds: 0.1 } });
    const dir = await writeModel(sb.root, "tokenizer-code", DENSE_CONFIG);
    await writeFile(
      join(dir, "tokenizer_config.json"),
      JSON.stringify({ auto_map: { AutoTokenizer: ["tokenization_x.XTokenizer", null] } }),
    );
    const r = await run((await startServer(sb, dir)).proc);
    expect(r.code).toBe(1);
    expect(r.output).toMatch(/\(APIServer pid=\d+\) +tokenizer = AutoTokenizer\.from_pretrained\(/);
    expect(r.output).toContain(
      `ValueError: The repository ${dir} contains custom code which must be executed to correctly load the model.`,
    );
  });

  it("oom and a too small --gpu-memory-utilization give vLLM's errors", async () => {
    await withFaults({ vllm: { mode: "oom", loadSeconds: 0.1 } });
    const oom = await run((await startServer(sb, model)).proc);
    expect(oom.code).toBe(1);
    expect(oom.output).toMatch(
      /torch\.OutOfMemoryError: CUDA out of memory\. Tried to allocate [\d.]+ GiB\. GPU 0 has a total capacity of/,
    );
    await withFaults({ vllm: { loadSeconds: 0.1 } });
    const none = await run((await startServer(sb, model, ["--gpu-memory-utilization", "0.03"])).proc);
    expect(none.code).toBe(1);
    expect(none.output).toContain(
      "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.",
    );
    const short = await run((await startServer(sb, model, ["--gpu-memory-utilization", "0.06"])).proc);
    expect(short.code).toBe(1);
    expect(short.output).toMatch(
      /ValueError: To serve at least one request with the model's max seq len \(40960\), \([\d.]+ GiB KV cache is needed, which is larger than the available KV cache memory \([\d.]+ GiB\)\./,
    );
  });

  it("hang: loads forever, never listens, still stops on SIGTERM", async () => {
    await withFaults({ vllm: { mode: "hang", loadSeconds: 0.1 } });
    const { port, proc } = await startServer(sb, model);
    await proc.waitFor(/Starting to load model/);
    await new Promise((r) => setTimeout(r, 300));
    expect(await portOpen(port)).toBe(false);
    expect(await stopProc(proc)).toBe(0);
  });
});
