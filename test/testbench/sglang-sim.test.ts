import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../testbench/free-port.ts";
import { renderServerArgsPy } from "../../testbench/gpu-host/shims/sglang-flags.mjs";
import { removeEditableInstall, writeEditableInstall } from "../../testbench/gpu-host/shims/venv.mjs";
import { until } from "../../testbench/until.ts";
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

const PYTHON_SHIM = resolve(
  dirname(fileURLToPath(import.meta.url)),
  "../../testbench/gpu-host/shims/python.mjs",
);

interface Sandbox {
  root: string;
  remove: () => Promise<void>;
}

/**
 * A minimal sandbox of our own: state/config.json, state/faults.json, models/, and SGLang 0.5.6
 * installed editable from opt/sglang/python (no server_args.py there: the built-in flags).
 */
async function makeSandbox(gpus: string, faults: Record<string, unknown> = {}): Promise<Sandbox> {
  const dir = await tempDir("sglang-sim-");
  await mkdir(join(dir.path, "state", "gpu-usage"), { recursive: true });
  await writeFile(join(dir.path, "state", "config.json"), JSON.stringify({ name: "gpu-test", gpus }));
  await writeFile(join(dir.path, "state", "faults.json"), JSON.stringify(faults));
  await installEngine(dir.path);
  return { root: dir.path, remove: dir.remove };
}

/** `pip install -e <root>/opt/sglang/python` of an engine whose version.py says 0.5.6. */
async function installEngine(root: string): Promise<string> {
  const project = join(root, "opt", "sglang", "python");
  await mkdir(join(project, "sglang"), { recursive: true });
  await writeFile(join(project, "sglang", "version.py"), '__version__ = "0.5.6"\n');
  writeEditableInstall({ name: "sglang", version: "0.5.6", projectDir: project }, root);
  return project;
}

function python(sandbox: Sandbox, args: string[], env: Record<string, string> = {}): Proc {
  return spawnProc(process.execPath, [PYTHON_SHIM, ...args], { MODELSWAP_SANDBOX: sandbox.root, ...env });
}

async function run(sandbox: Sandbox, args: string[], env: Record<string, string> = {}) {
  const p = python(sandbox, args, env);
  const { code } = await p.exited;
  return { code, output: p.output() };
}

async function getJson(port: number, path: string): Promise<{ status: number; body: unknown; text: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  const text = await res.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = null;
  }
  return { status: res.status, body, text };
}

interface GenerateBody {
  text: string;
  output_ids: number[];
  meta_info: {
    finish_reason: unknown;
    completion_tokens: number;
    prompt_tokens: number;
    output_token_logprobs: [number | null, number, string | null][];
  };
}

interface ChatBody {
  object: string;
  model: string;
  choices: {
    index: number;
    finish_reason: string;
    message: { content: string };
    logprobs: { content: { token: string; logprob: number | null; bytes: number[] }[] } | null;
  }[];
  usage: { completion_tokens: number };
}

interface CompletionBody {
  object: string;
  choices: { text: string; logprobs: { token_logprobs: (number | null)[] } }[];
}

async function postJson<T>(
  port: number,
  path: string,
  payload: unknown,
): Promise<{ status: number; body: T }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(payload),
  });
  return { status: res.status, body: (await res.json()) as T };
}

async function startServer(sandbox: Sandbox, modelDir: string, extra: string[] = []) {
  const port = await freePort();
  const proc = python(sandbox, [
    "-m",
    "sglang.launch_server",
    "--model-path",
    modelDir,
    "--port",
    String(port),
    ...extra,
  ]);
  return { port, proc };
}

afterAll(() => {
  for (const child of running) child.kill("SIGKILL");
});

describe("simulated SGLang server: healthy dense model on 1x H200", () => {
  let sb: Sandbox;
  let port: number;
  let proc: Proc;
  let model: string;

  beforeAll(async () => {
    sb = await makeSandbox("h200-1gpu", { sglang: { loadSeconds: 0.6, msPerToken: 1, ttftMs: 3 } });
    model = await writeModel(sb.root, "Qwen3-4B", DENSE_CONFIG);
    ({ port, proc } = await startServer(sb, model, ["--served-model-name", "qwen3-4b", "--tp", "1"]));
    // Like the real server, the port is not bound while the weights load.
    await proc.waitFor(/Load weight begin\. avail mem=\d+\.\d\d GB/);
    expect(await portOpen(port)).toBe(false);
    await proc.waitFor(/The server is fired up and ready to roll!/);
  });

  afterAll(async () => {
    if (proc) await stopProc(proc);
    await sb?.remove();
  });

  it("logs the real startup lines in order", () => {
    const log = proc.output();
    const order = [
      /server_args=ServerArgs\(model_path='[^']+Qwen3-4B', /,
      /\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d TP0\] Load weight begin\. avail mem=/,
      /Load weight end\. elapsed=\d+\.\d\d s, type=Qwen3ForCausalLM, dtype=torch\.bfloat16, avail mem=/,
      /KV Cache is allocated\. dtype: torch\.bfloat16, #tokens: \d+, K size: \d+\.\d\d GB, V size: \d+\.\d\d GB/,
      /max_total_num_tokens=\d+, chunked_prefill_size=\d+/,
      /INFO: {5}Uvicorn running on http:\/\/127\.0\.0\.1:\d+ \(Press CTRL\+C to quit\)/,
      /The server is fired up and ready to roll!/,
    ];
    let at = 0;
    for (const re of order) {
      const m = re.exec(log.slice(at));
      expect(m, `missing ${re} after offset ${at}`).not.toBeNull();
      at += (m?.index ?? 0) + (m?.[0].length ?? 0);
    }
  });

  it("answers /health, /health_generate, /v1/models and /get_model_info like SGLang", async () => {
    const health = await getJson(port, "/health");
    expect(health.status).toBe(200);
    expect(health.text).toBe("");
    expect((await getJson(port, "/health_generate")).status).toBe(200);
    const models = await getJson(port, "/v1/models");
    expect(models.body).toMatchObject({
      object: "list",
      data: [{ id: "qwen3-4b", object: "model", owned_by: "sglang", root: "qwen3-4b", max_model_len: 40960 }],
    });
    const info = await getJson(port, "/get_model_info");
    expect(info.body).toMatchObject({
      model_path: model,
      tokenizer_path: model,
      is_generation: true,
      preferred_sampling_params: null,
      weight_version: "default",
    });
    const server = await getJson(port, "/get_server_info");
    expect(server.body).toMatchObject({ tp_size: 1, port, version: "0.5.6" });
    expect((server.body as { internal_states: unknown[] }).internal_states).toHaveLength(1);
    expect((await getJson(port, "/nope")).status).toBe(404);
  });

  it("/generate returns text, meta_info and output_token_logprobs", async () => {
    const { status, body } = await postJson<GenerateBody>(port, "/generate", {
      text: "What is the capital of France? The capital of France is",
      sampling_params: { temperature: 0, max_new_tokens: 16 },
      return_logprob: true,
    });
    expect(status).toBe(200);
    expect(body.text).toContain("Paris");
    expect(body.meta_info.finish_reason).toEqual({ type: "stop", matched: 151645 });
    expect(body.meta_info.completion_tokens).toBe(body.meta_info.output_token_logprobs.length);
    expect(body.meta_info.prompt_tokens).toBeGreaterThan(5);
    for (const [lp, id, text] of body.meta_info.output_token_logprobs) {
      expect(typeof lp).toBe("number");
      expect(lp ?? 0).toBeLessThan(0);
      expect(Number.isInteger(id)).toBe(true);
      expect(text).toBeNull();
    }
    // deterministic at temperature 0
    const again = await postJson<GenerateBody>(port, "/generate", {
      text: "What is the capital of France? The capital of France is",
      sampling_params: { temperature: 0, max_new_tokens: 16 },
      return_logprob: true,
    });
    expect(again.body.text).toBe(body.text);
    expect(again.body.meta_info.output_token_logprobs).toEqual(body.meta_info.output_token_logprobs);
    // arithmetic, length limit
    const four = await postJson<GenerateBody>(port, "/generate", {
      text: "2+2=",
      sampling_params: { temperature: 0, max_new_tokens: 4 },
    });
    expect(four.body.text.trim()).toBe("4");
    const long = await postJson<GenerateBody>(port, "/generate", {
      text: "Tell me a story",
      sampling_params: { temperature: 0, max_new_tokens: 10, ignore_eos: true },
    });
    expect(long.body.meta_info).toMatchObject({
      completion_tokens: 10,
      finish_reason: { type: "length", length: 10 },
    });
  });

  it("/generate streams SSE chunks ending in [DONE]", async () => {
    const res = await fetch(`http://127.0.0.1:${port}/generate`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        text: "hello",
        sampling_params: { max_new_tokens: 5, ignore_eos: true },
        stream: true,
      }),
    });
    const text = await res.text();
    const events = text.split("\n\n").filter((e) => e.startsWith("data: "));
    expect(events.at(-1)).toBe("data: [DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)));
    expect(chunks).toHaveLength(5);
    expect(chunks.map((c) => c.meta_info.completion_tokens)).toEqual([1, 2, 3, 4, 5]);
    expect(chunks.at(-1).meta_info.finish_reason).toEqual({ type: "length", length: 5 });
    expect(chunks[0].meta_info.finish_reason).toBeNull();
  });

  it("/v1/chat/completions and /v1/completions return OpenAI shapes with logprobs", async () => {
    const chat = await postJson<ChatBody>(port, "/v1/chat/completions", {
      model: "qwen3-4b",
      messages: [{ role: "user", content: "What is the capital of France?" }],
      temperature: 0,
      max_tokens: 32,
      logprobs: true,
    });
    expect(chat.status).toBe(200);
    expect(chat.body).toMatchObject({
      object: "chat.completion",
      model: "qwen3-4b",
      choices: [{ index: 0, finish_reason: "stop" }],
    });
    expect(chat.body.choices[0]?.message.content).toBe("The capital of France is Paris.");
    const content = chat.body.choices[0]?.logprobs?.content ?? [];
    expect(content.map((c) => c.token).join("")).toBe("The capital of France is Paris.");
    expect(content.every((c) => c.logprob !== null && c.logprob < 0)).toBe(true);
    expect(chat.body.usage.completion_tokens).toBe(content.length);

    const completion = await postJson<CompletionBody>(port, "/v1/completions", {
      model: "qwen3-4b",
      prompt: "The capital of France is",
      max_tokens: 8,
      temperature: 0,
      logprobs: 1,
    });
    expect(completion.body.object).toBe("text_completion");
    expect(completion.body.choices[0]?.text).toBe(" Paris.");
    expect(completion.body.choices[0]?.logprobs.token_logprobs.every((v) => v !== null && v < 0)).toBe(true);
  });

  it("registers GPU usage for nvidia-smi", async () => {
    const file = join(sb.root, "state", "gpu-usage", `${proc.child.pid}.json`);
    const usage = JSON.parse(await readFile(file, "utf8"));
    expect(usage.gpus).toEqual([0]);
    expect(usage.memMiB).toBeGreaterThan(100_000);
    expect(usage.memMiB).toBeLessThan(143_771);
  });

  it("runs bench_serving against it and prints the real summary", async () => {
    const outFile = join(sb.root, "bench.jsonl");
    const r = await run(sb, [
      "-m",
      "sglang.bench_serving",
      "--backend",
      "sglang",
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "--dataset-name",
      "random",
      "--random-input-len",
      "64",
      "--random-output-len",
      "16",
      "--random-range-ratio",
      "1",
      "--num-prompts",
      "12",
      "--max-concurrency",
      "4",
      "--output-file",
      outFile,
      "--disable-tqdm",
    ]);
    expect(r.code, r.output).toBe(0);
    const values = summaryRows(r.output);
    expect(values.get("Backend:")).toBe("sglang");
    expect(values.get("Traffic request rate:")).toBe("inf");
    expect(values.get("Max request concurrency:")).toBe("4");
    expect(values.get("Successful requests:")).toBe("12");
    expect(values.get("Total input tokens:")).toBe(String(12 * 64));
    expect(values.get("Total generated tokens:")).toBe(String(12 * 16));
    expect(Number(values.get("Peak concurrent requests:"))).toBe(4);
    const ttft = Number(values.get("Mean TTFT (ms):"));
    const tpot = Number(values.get("Mean TPOT (ms):"));
    const e2e = Number(values.get("Mean E2E Latency (ms):"));
    expect(ttft).toBeGreaterThan(0);
    expect(tpot).toBeGreaterThan(0.5);
    expect(tpot).toBeLessThan(50);
    expect(e2e).toBeGreaterThan(ttft);
    expect(Number(values.get("Output token throughput (tok/s):"))).toBeGreaterThan(0);
    for (const label of [
      "P99 TTFT (ms):",
      "Median ITL (ms):",
      "P95 ITL (ms):",
      "Max ITL (ms):",
      "P90 E2E Latency (ms):",
    ]) {
      expect(values.has(label), label).toBe(true);
    }
    // Python's json.dumps writes float("inf") as a bare Infinity, exactly like the real tool.
    const raw = (await readFile(outFile, "utf8")).trim();
    expect(raw).toContain('"request_rate": Infinity');
    const result = JSON.parse(raw.replace(/: (-?Infinity|NaN)\b/g, ': "$1"'));
    expect(result).toMatchObject({
      backend: "sglang",
      completed: 12,
      total_output_tokens: 192,
      max_concurrency: 4,
    });
    expect(result.mean_ttft_ms).toBeCloseTo(ttft, 1);
  });

  it("stops cleanly on SIGTERM and frees its GPUs", async () => {
    const pid = proc.child.pid;
    const code = await stopProc(proc);
    expect(code).toBe(0);
    expect(existsSync(join(sb.root, "state", "gpu-usage", `${pid}.json`))).toBe(false);
    expect(proc.output()).toContain("INFO:     Shutting down");
  });

  it("bench_serving fails clearly when the server is down", async () => {
    const r = await run(sb, [
      "-m",
      "sglang.bench_serving",
      "--port",
      String(port),
      "--dataset-name",
      "random",
      "--num-prompts",
      "2",
    ]);
    expect(r.code).not.toBe(0);
    expect(r.output).toContain(`Failed to fetch model from http://0.0.0.0:${port}/v1/models`);
    expect(r.output).toContain("Connection refused");
  });
});

describe("simulated SGLang server: NVFP4", () => {
  let sb: Sandbox;
  let model: string;
  const procs: Proc[] = [];

  beforeAll(async () => {
    sb = await makeSandbox("8x-rtx-pro-6000-blackwell", {
      sglang: { loadSeconds: 0.2, msPerToken: 1, ttftMs: 2 },
    });
    model = await writeModel(sb.root, "Qwen3-MoE-NVFP4", MOE_CONFIG, true);
  });

  afterAll(async () => {
    for (const p of procs) await stopProc(p);
    await sb?.remove();
  });

  it("on sm_120 without the FlashInfer backends: healthy, but outputs '!!!!' with null logprobs", async () => {
    const { port, proc } = await startServer(sb, model, ["--tp", "4", "--quantization", "modelopt_fp4"]);
    procs.push(proc);
    await proc.waitFor(/fired up and ready to roll/);
    expect(proc.output()).toMatch(
      /Load weight end\. elapsed=[\d.]+ s, type=Qwen3MoeForCausalLM, quant=modelopt_fp4, quant_algo=NVFP4/,
    );
    expect((await getJson(port, "/health_generate")).status).toBe(200);
    const gen = await postJson<GenerateBody>(port, "/generate", {
      text: "What is the capital of France?",
      sampling_params: { temperature: 0, max_new_tokens: 12 },
      return_logprob: true,
    });
    expect(gen.body.text).toBe("!".repeat(12));
    expect(gen.body.output_ids).toEqual(Array(12).fill(0));
    expect(gen.body.meta_info.output_token_logprobs.every((t) => t[0] === null && t[1] === 0)).toBe(true);
    const chat = await postJson<ChatBody>(port, "/v1/chat/completions", {
      messages: [{ role: "user", content: "What is the capital of France?" }],
      temperature: 0,
      max_tokens: 8,
      logprobs: true,
    });
    expect(chat.body.choices[0]?.message.content).toBe("!!!!!!!!");
    expect(chat.body.choices[0]?.finish_reason).toBe("length");
    expect(chat.body.choices[0]?.logprobs?.content[0]?.logprob).toBeNull();
    const usage = JSON.parse(
      await readFile(join(sb.root, "state", "gpu-usage", `${proc.child.pid}.json`), "utf8"),
    );
    expect(usage.gpus).toEqual([0, 1, 2, 3]);
    expect(await stopProc(proc)).toBe(0);
  });

  it("on sm_120 with --moe-runner-backend flashinfer_cutlass --fp4-gemm-backend flashinfer_cudnn: sane output", async () => {
    const { port, proc } = await startServer(sb, model, [
      "--tp-size",
      "8",
      "--moe-runner-backend",
      "flashinfer_cutlass",
      "--fp4-gemm-backend=flashinfer_cudnn",
      "--trust-remote-code",
      "--enable-hierarchical-cache",
      "--hicache-ratio",
      "4",
      "--tool-call-parser",
      "qwen3_coder",
      "--reasoning-parser",
      "qwen3",
    ]);
    procs.push(proc);
    await proc.waitFor(/fired up and ready to roll/);
    const gen = await postJson<GenerateBody>(port, "/generate", {
      text: "What is the capital of France?",
      sampling_params: { temperature: 0, max_new_tokens: 12 },
      return_logprob: true,
    });
    expect(gen.body.text).toContain("Paris");
    expect(gen.body.meta_info.output_token_logprobs.every((t) => typeof t[0] === "number")).toBe(true);
    expect(await stopProc(proc)).toBe(0);
  });

  it("on 1x H200 (compute capability 9.0): crashes while loading with the real error", async () => {
    const h200 = await makeSandbox("h200-1gpu", { sglang: { loadSeconds: 0.1 } });
    try {
      const m = await writeModel(h200.root, "Qwen3-MoE-NVFP4", MOE_CONFIG, true);
      const r = await run(h200, [
        "-m",
        "sglang.launch_server",
        "--model-path",
        m,
        "--port",
        String(await freePort()),
      ]);
      expect(r.code).toBe(1);
      expect(r.output).toContain("Load weight begin.");
      expect(r.output).toContain("Scheduler hit an exception: Traceback (most recent call last):");
      expect(r.output).toContain(
        "ValueError: The quantization method modelopt_fp4 is not supported for the current GPU. Minimum capability: 100. Current capability: 90.",
      );
      expect(r.output).toContain("Received sigquit from a child process. It usually means the child failed.");
      expect(r.output).not.toContain("fired up");
    } finally {
      await h200.remove();
    }
  });
});

describe("simulated SGLang command line", () => {
  let sb: Sandbox;
  let model: string;

  beforeAll(async () => {
    sb = await makeSandbox("8x-rtx-pro-6000-blackwell", { sglang: { loadSeconds: 0.1 } });
    model = await writeModel(sb.root, "dense", DENSE_CONFIG);
  });
  afterAll(async () => {
    await sb?.remove();
  });

  it("rejects an unknown flag like argparse (exit 2)", async () => {
    const r = await run(sb, ["-m", "sglang.launch_server", "--model-path", model, "--foo", "bar"]);
    expect(r.code).toBe(2);
    expect(r.output).toMatch(/^usage: launch_server\.py \[-h\] --model-path MODEL_PATH/m);
    expect(r.output).toContain("launch_server.py: error: unrecognized arguments: --foo bar");
  });

  it("rejects an invalid choice and a missing --model-path", async () => {
    const bad = await run(sb, [
      "-m",
      "sglang.launch_server",
      "--model-path",
      model,
      "--quantization",
      "nvfp4x",
    ]);
    expect(bad.code).toBe(2);
    expect(bad.output).toMatch(
      /error: argument --quantization: invalid choice: 'nvfp4x' \(choose from 'awq', 'fp8', /,
    );
    const missing = await run(sb, ["-m", "sglang.launch_server", "--port", "1234"]);
    expect(missing.code).toBe(2);
    expect(missing.output).toContain("error: the following arguments are required: --model-path/--model");
  });

  it("--help lists every supported flag, including --fp4-gemm-backend", async () => {
    const r = await run(sb, ["-m", "sglang.launch_server", "--help"]);
    expect(r.code).toBe(0);
    for (const flag of [
      "--model-path MODEL_PATH, --model MODEL_PATH",
      "--tp-size TP_SIZE, --tensor-parallel-size TP_SIZE",
      "--fp4-gemm-backend {auto,flashinfer_cudnn,",
      "--moe-runner-backend {auto,",
      "--enable-hierarchical-cache",
      "--hicache-ratio HICACHE_RATIO",
      "--mem-fraction-static MEM_FRACTION_STATIC",
    ]) {
      expect(r.output, flag).toContain(flag);
    }
  });

  it("takes the flag spellings from the engine source when it has server_args.py", async () => {
    const src = join(sb.root, "opt", "sglang", "python", "sglang", "srt");
    await mkdir(src, { recursive: true });
    // An older engine: no --fp4-gemm-backend yet.
    await writeFile(join(src, "server_args.py"), renderServerArgsPy({ omit: ["--fp4-gemm-backend"] }));
    try {
      const r = await run(sb, [
        "-m",
        "sglang.launch_server",
        "--model-path",
        model,
        "--fp4-gemm-backend",
        "flashinfer_cudnn",
      ]);
      expect(r.code).toBe(2);
      expect(r.output).toContain(
        "launch_server.py: error: unrecognized arguments: --fp4-gemm-backend flashinfer_cudnn",
      );
      const help = await run(sb, ["-m", "sglang.launch_server", "--help"]);
      expect(help.output).toContain("--moe-runner-backend {auto,");
      expect(help.output).not.toContain("--fp4-gemm-backend");
      // Every other flag of that engine still works.
      const { port, proc } = await startServer(sb, model, [
        "--tp",
        "2",
        "--moe-runner-backend",
        "flashinfer_cutlass",
      ]);
      await proc.waitFor(/fired up and ready to roll/);
      expect((await getJson(port, "/health")).status).toBe(200);
      expect(await stopProc(proc)).toBe(0);
    } finally {
      await rm(join(src, "server_args.py"), { force: true });
    }
  });

  it("python --version, import checks and unknown modules behave like CPython", async () => {
    const version = await run(sb, ["--version"]);
    expect(version).toEqual({ code: 0, output: "Python 3.12.3\n" });
    // Not installed (no __editable__.sglang-*.pth in the venv): import and -m fail like CPython.
    removeEditableInstall("sglang", sb.root);
    try {
      const missing = await run(sb, ["-c", "import sglang; print(sglang.__version__)"]);
      expect(missing.code).toBe(1);
      expect(missing.output).toBe(
        "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nModuleNotFoundError: No module named 'sglang'\n",
      );
      const noServer = await run(sb, ["-m", "sglang.launch_server", "--help"]);
      expect(noServer.code).toBe(1);
      expect(noServer.output).toContain(
        "Error while finding module specification for 'sglang.launch_server' (ModuleNotFoundError: No module named 'sglang')",
      );
    } finally {
      await installEngine(sb.root);
    }
    // Installed: the version comes from the installed project's sglang/version.py.
    const ok = await run(sb, ["-c", "import sglang; print(sglang.__version__, sglang.__file__)"]);
    expect(ok).toEqual({
      code: 0,
      output: `0.5.6 ${join(sb.root, "opt", "sglang", "python", "sglang", "__init__.py")}\n`,
    });
    const torch = await run(sb, [
      "-c",
      "import torch; print(torch.cuda.device_count(), torch.cuda.get_device_capability())",
    ]);
    expect(torch.output).toBe("8 (12, 0)\n");
    const nomod = await run(sb, ["-m", "sglang.nope"]);
    expect(nomod.code).toBe(1);
    expect(nomod.output).toContain("No module named sglang.nope");
    const badopt = await run(sb, ["--frobnicate"]);
    expect(badopt.code).toBe(2);
  });
});

describe("simulated SGLang faults", () => {
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

  it("crash-on-start: Python traceback, exit 1", async () => {
    await withFaults({ sglang: "crash-on-start" });
    const r = await run(sb, ["-m", "sglang.launch_server", "--model-path", model]);
    expect(r.code).toBe(1);
    expect(r.output).toMatch(/^Traceback \(most recent call last\):/m);
    expect(r.output).toContain("ImportError:");
  });

  it("a model directory without config.json crashes with the transformers error", async () => {
    await withFaults({ sglang: { loadSeconds: 0.1 } });
    const empty = join(sb.root, "models", "empty");
    await mkdir(empty, { recursive: true });
    const r = await run(sb, ["-m", "sglang.launch_server", "--model-path", empty]);
    expect(r.code).toBe(1);
    expect(r.output).toContain(`OSError: ${empty} does not appear to have a file named config.json.`);
  });

  it("a repo's own code: an auto_map naming AutoConfig, or a tokenizer of its own, refuses to start without --trust-remote-code; an empty auto_map does not", async () => {
    await withFaults({ sglang: { loadSeconds: 0.1 } });
    const start = (dir: string, extra: string[] = []) =>
      run(sb, ["-m", "sglang.launch_server", "--model-path", dir, "--port", "1", ...extra]);
    const configCode = await writeModel(sb.root, "config-code", {
      ...DENSE_CONFIG,
      auto_map: { AutoConfig: "configuration_x.XConfig" },
    });
    const byConfig = await start(configCode);
    expect(byConfig.code).toBe(1);
    expect(byConfig.output).toContain(
      `ValueError: The repository ${configCode} contains custom code which must be executed to correctly load the model.`,
    );
    // Kimi K2's shape: a tokenizer class of its own, named only in tokenizer_config.json
    const tokenizerCode = await writeModel(sb.root, "tokenizer-code", { ...DENSE_CONFIG, auto_map: {} });
    await writeFile(
      join(tokenizerCode, "tokenizer_config.json"),
      JSON.stringify({
        tokenizer_class: "TikTokenTokenizer",
        auto_map: { AutoTokenizer: ["tokenization_kimi.TikTokenTokenizer", null] },
      }),
    );
    const byTokenizer = await start(tokenizerCode);
    expect(byTokenizer.code).toBe(1);
    expect(byTokenizer.output).toContain("    tokenizer = AutoTokenizer.from_pretrained(");
    expect(byTokenizer.output).toContain(
      "ValueError: Tokenizer class TikTokenTokenizer does not exist or is not currently imported.",
    );
    expect(byTokenizer.output).not.toContain("contains custom code");
  });

  it("oom: torch.OutOfMemoryError in the journal, exit 1", async () => {
    await withFaults({ sglang: { mode: "oom", loadSeconds: 0.1 } });
    const r = await run(sb, [
      "-m",
      "sglang.launch_server",
      "--model-path",
      model,
      "--port",
      String(await freePort()),
    ]);
    expect(r.code).toBe(1);
    expect(r.output).toMatch(
      /torch\.OutOfMemoryError: CUDA out of memory\. Tried to allocate [\d.]+ GiB\. GPU 0 has a total capacity of/,
    );
  });

  it("hang (per port): never finishes loading, never binds, still stops on SIGTERM", async () => {
    const port = await freePort();
    await withFaults({ sglang: { loadSeconds: 0.1, ports: { [String(port)]: { mode: "hang" } } } });
    const proc = python(sb, ["-m", "sglang.launch_server", "--model-path", model, "--port", String(port)]);
    await proc.waitFor(/Load weight begin/);
    await new Promise((r) => setTimeout(r, 400));
    expect(await portOpen(port)).toBe(false);
    expect(proc.output()).not.toContain("Load weight end");
    expect(await stopProc(proc)).toBe(0);
  });

  it("sampling-errors: logs the sampler error and answers garbage; die-after: exits later", async () => {
    await withFaults({ sglang: { modes: ["sampling-errors"], loadSeconds: 0.1, "die-after": 1.2 } });
    const { port, proc } = await startServer(sb, model);
    await proc.waitFor(/fired up and ready to roll/);
    const gen = await postJson<GenerateBody>(port, "/generate", {
      text: "What is the capital of France?",
      sampling_params: { temperature: 0, max_new_tokens: 8 },
      return_logprob: true,
    });
    expect(gen.body.text).not.toContain("Paris");
    expect(proc.output()).toContain("Detected errors during sampling! NaN in the logits.");
    const { code } = await proc.exited;
    expect(code).toBe(1);
    expect(proc.output()).toContain("Scheduler hit an exception");
  });

  it("answers /health with 503 during warmup; a second server on the same GPU takes its fraction of what the first left", async () => {
    await withFaults({ sglang: { loadSeconds: 0.1, warmupMs: 700 } });
    const { port, proc } = await startServer(sb, model);
    await proc.waitFor(/Uvicorn running on/);
    expect((await getJson(port, "/health")).status).toBe(503);
    await proc.waitFor(/fired up and ready to roll/);
    expect((await getJson(port, "/health")).status).toBe(200);
    const tokensOf = (output: string) => Number(/max_total_num_tokens=(\d+)/.exec(output)?.[1]);
    // The first server holds most of GPU 0 (per the usage registry nvidia-smi reads). SGLang applies
    // --mem-fraction-static to the memory free at its start (model_runner.py, profile_max_num_token with
    // min_per_gpu_memory), so a second one starts and takes that share of what the first left.
    const second = await startServer(sb, model);
    await second.proc.waitFor(/fired up and ready to roll/);
    const free = Number(/Load weight begin\. avail mem=([\d.]+) GB/.exec(second.proc.output())?.[1]);
    expect(free).toBeGreaterThan(10);
    expect(free).toBeLessThan(25);
    expect(tokensOf(second.proc.output())).toBeLessThan(tokensOf(proc.output()) / 4);
    expect(await stopProc(second.proc)).toBe(0);
    // a fraction of the free memory too small for its weights leaves no KV cache
    const third = await run(sb, [
      "-m",
      "sglang.launch_server",
      "--model-path",
      model,
      "--port",
      String(await freePort()),
      "--mem-fraction-static",
      "0.02",
    ]);
    expect(third.code).toBe(1);
    expect(third.output).toContain(
      "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
    );
    expect(await stopProc(proc)).toBe(0);
  });

  it("exits 1 with uvicorn's error when the port is taken", async () => {
    await withFaults({ sglang: { loadSeconds: 0.1 } });
    const blocker = createServer();
    const port = await freePort();
    await new Promise<void>((res) => blocker.listen(port, "127.0.0.1", () => res()));
    try {
      const r = await run(sb, ["-m", "sglang.launch_server", "--model-path", model, "--port", String(port)]);
      expect(r.code).toBe(1);
      expect(r.output).toContain(
        `ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', ${port}): address already in use`,
      );
    } finally {
      blocker.close();
    }
  });

  it("a bigger model than the GPUs hold runs out of memory by itself", async () => {
    await withFaults({ sglang: { loadSeconds: 0.1 } });
    const big = await writeModel(sb.root, "big", {
      ...DENSE_CONFIG,
      hidden_size: 16384,
      intermediate_size: 53248,
      num_hidden_layers: 126,
      num_attention_heads: 128,
    });
    const r = await run(sb, [
      "-m",
      "sglang.launch_server",
      "--model-path",
      big,
      "--port",
      String(await freePort()),
    ]);
    expect(r.code).toBe(1);
    expect(r.output).toContain("torch.OutOfMemoryError: CUDA out of memory.");
  });
});

describe("simulated SGLang memory saver (release_memory_occupation / resume_memory_occupation)", () => {
  let sb: Sandbox;
  let model: string;

  beforeAll(async () => {
    sb = await makeSandbox("h200-1gpu", { sglang: { loadSeconds: 0.1, msPerToken: 1, ttftMs: 1 } });
    await writeFile(
      join(sb.root, "state", "config.json"),
      JSON.stringify({ name: "gpu-test", gpus: "h200-1gpu", hostMemGiB: 512 }),
    );
    model = await writeModel(sb.root, "dense", DENSE_CONFIG);
  });
  afterAll(async () => {
    await sb?.remove();
  });

  const usageMiB = async (pid: number | undefined) =>
    (
      JSON.parse(await readFile(join(sb.root, "state", "gpu-usage", `${pid}.json`), "utf8")) as {
        memMiB: number;
      }
    ).memMiB;
  /** The processes that pinned host RAM (sandbox.mjs registerPinnedMemory, which `free` counts). */
  const pinned = async () => {
    const dir = join(sb.root, "state", "pinned");
    return existsSync(dir) ? readdir(dir) : [];
  };

  async function served(extra: string[]) {
    const server = await startServer(sb, model, extra);
    await server.proc.waitFor(/The server is fired up and ready to roll!/);
    return server;
  }

  it("with the memory saver and a CPU backup: frees the GPU down to its context, pins the weights in host RAM, and resumes them whole", async () => {
    const { port, proc } = await served(["--enable-memory-saver", "--enable-weights-cpu-backup"]);
    const before = await usageMiB(proc.child.pid);
    const release = await postJson<{ success: boolean }>(port, "/release_memory_occupation", {});
    expect(release).toEqual({ status: 200, body: { success: true, message: "Success" } });
    expect(await usageMiB(proc.child.pid)).toBeLessThan(1024);
    expect(before).toBeGreaterThan(10_000);
    expect(await pinned()).toEqual([`${proc.child.pid}.json`]);
    const resume = await postJson<{ success: boolean }>(port, "/resume_memory_occupation", {});
    expect(resume.status).toBe(200);
    expect(await usageMiB(proc.child.pid)).toBe(before);
    expect(await pinned()).toEqual([]);
    const answer = await postJson<GenerateBody>(port, "/generate", {
      text: "The capital of France is",
      sampling_params: { max_new_tokens: 4, temperature: 0 },
      return_logprob: true,
    });
    expect(answer.body.meta_info.output_token_logprobs.every(([lp]) => lp !== null)).toBe(true);
    await stopProc(proc);
  });

  it("without a CPU backup the resumed weights are not the model's: NaN logprobs", async () => {
    const { port, proc } = await served(["--enable-memory-saver"]);
    await postJson(port, "/release_memory_occupation", {});
    expect(await pinned()).toEqual([]);
    await postJson(port, "/resume_memory_occupation", {});
    const answer = await postJson<GenerateBody>(port, "/generate", {
      text: "The capital of France is",
      sampling_params: { max_new_tokens: 4, temperature: 0 },
      return_logprob: true,
    });
    expect(answer.body.meta_info.output_token_logprobs.every(([lp]) => lp === null)).toBe(true);
    await stopProc(proc);
  });

  it("without the memory saver a release answers 200 and frees nothing", async () => {
    const { port, proc } = await served([]);
    const before = await usageMiB(proc.child.pid);
    expect((await postJson(port, "/release_memory_occupation", {})).status).toBe(200);
    expect(await usageMiB(proc.child.pid)).toBe(before);
    await stopProc(proc);
  });

  it("a resume with nothing released, or a release while a request runs, takes the server down", async () => {
    const first = await served(["--enable-memory-saver", "--enable-weights-cpu-backup"]);
    await expect(postJson(first.port, "/resume_memory_occupation", {})).rejects.toThrow();
    expect((await first.proc.exited).code).toBe(1);
    expect(first.proc.output()).toContain("KeyError: 'weights'");
    expect(first.proc.output()).toContain("Received sigquit from a child process.");

    const second = await served(["--enable-memory-saver", "--enable-weights-cpu-backup"]);
    const long = postJson(second.port, "/generate", {
      text: "Count",
      sampling_params: { max_new_tokens: 400, temperature: 0, ignore_eos: true },
    }).catch(() => "cut");
    await until(
      async () => ((await getJson(second.port, "/get_load")).body as { num_reqs: number }[])[0]!.num_reqs > 0,
      {
        timeoutMs: 10_000,
        what: "a request running",
      },
    );
    await expect(postJson(second.port, "/release_memory_occupation", {})).rejects.toThrow();
    expect((await second.proc.exited).code).toBe(1);
    expect(second.proc.output()).toContain(
      "AssertionError: release_memory_occupation should be called only when server is idle.",
    );
    expect(await long).toBe("cut");
  });

  it("corrupt-backup: the resumed model answers NaN (torch_memory_saver#71)", async () => {
    await writeFile(
      join(sb.root, "state", "faults.json"),
      JSON.stringify({ sglang: { loadSeconds: 0.1, msPerToken: 1, ttftMs: 1, mode: "corrupt-backup" } }),
    );
    const { port, proc } = await served(["--enable-memory-saver", "--enable-weights-cpu-backup"]);
    const ok = await postJson<GenerateBody>(port, "/generate", {
      text: "The capital of France is",
      sampling_params: { max_new_tokens: 4, temperature: 0 },
      return_logprob: true,
    });
    expect(ok.body.meta_info.output_token_logprobs.every(([lp]) => lp !== null)).toBe(true);
    await postJson(port, "/release_memory_occupation", {});
    await postJson(port, "/resume_memory_occupation", {});
    const bad = await postJson<GenerateBody>(port, "/generate", {
      text: "The capital of France is",
      sampling_params: { max_new_tokens: 4, temperature: 0 },
      return_logprob: true,
    });
    expect(bad.body.meta_info.output_token_logprobs.every(([lp]) => lp === null)).toBe(true);
    await stopProc(proc);
  });
});

describe("simulated SGLang in-place update (update_weights_from_disk)", () => {
  let sb: Sandbox;
  let model: string;

  beforeAll(async () => {
    sb = await makeSandbox("h200-1gpu", { sglang: { loadSeconds: 0.1, msPerToken: 1, ttftMs: 1 } });
    model = await writeModel(sb.root, "dense", DENSE_CONFIG);
  });
  afterAll(async () => {
    await sb?.remove();
  });

  async function served() {
    const server = await startServer(sb, model, []);
    await server.proc.waitFor(/The server is fired up and ready to roll!/);
    return server;
  }
  const ask = (port: number) =>
    postJson<GenerateBody>(port, "/generate", {
      text: "The capital of France is",
      sampling_params: { max_new_tokens: 4, temperature: 0 },
      return_logprob: true,
    });
  const modelId = async (port: number) =>
    ((await getJson(port, "/v1/models")).body as { data: { id: string }[] }).data[0]?.id;

  it("loads a new revision of the same shapes in place: the same process then serves the new path, as SGLang names it", async () => {
    const revision = await writeModel(sb.root, "dense-v2", DENSE_CONFIG);
    const { port, proc } = await served();
    const update = await postJson(port, "/update_weights_from_disk", { model_path: revision });
    expect(update).toEqual({
      status: 200,
      body: { success: true, message: "Succeeded to update model weights.", num_paused_requests: 0 },
    });
    // tokenizer_manager._update_model_path_info: the served name becomes the path
    expect(await modelId(port)).toBe(revision);
    expect((await ask(port)).body.meta_info.output_token_logprobs.every(([lp]) => lp !== null)).toBe(true);
    expect(proc.output()).toMatch(/Start update_weights\. Load format=auto/);
    expect(proc.output()).toMatch(/Update engine weights online from disk begin\. avail mem=[\d.]+ GB/);
    expect(proc.output()).toMatch(/Update weights end\./);
    expect(proc.child.exitCode).toBeNull();
    await stopProc(proc);
  });

  it("refuses weights of other shapes with a 400, rolls back to the original weights, and keeps serving them", async () => {
    const other = await writeModel(sb.root, "moe", MOE_CONFIG);
    const { port, proc } = await served();
    const before = await modelId(port);
    const update = await postJson<{ success: boolean; message: string }>(port, "/update_weights_from_disk", {
      model_path: other,
    });
    expect(update.status).toBe(400);
    expect(update.body.success).toBe(false);
    expect(update.body.message).toMatch(
      /^Failed to update weights: Attempted to load weight \(.+\) into parameter \(.+\)\.\nRolling back to original weights\.$/,
    );
    expect(await modelId(port)).toBe(before);
    expect((await ask(port)).body.meta_info.output_token_logprobs.every(([lp]) => lp !== null)).toBe(true);
    await stopProc(proc);
  });

  it("answers 400 for a path with no model, and 422 without model_path", async () => {
    const { port, proc } = await served();
    const missing = await postJson<{ message: string }>(port, "/update_weights_from_disk", {
      model_path: join(sb.root, "models", "nowhere"),
    });
    expect(missing.status).toBe(400);
    expect(missing.body.message).toMatch(/^Failed to get weights iterator: /);
    expect((await postJson(port, "/update_weights_from_disk", {})).status).toBe(422);
    await stopProc(proc);
  });

  it("UE8M0-scaled FP8 answers success and then NaN (sglang#30749)", async () => {
    const quant = { quant_method: "fp8", fmt: "e4m3", weight_block_size: [128, 128], scale_fmt: "ue8m0" };
    await rm(model, { recursive: true, force: true });
    model = await writeModel(sb.root, "dense-fp8", { ...DENSE_CONFIG, quantization_config: quant });
    const revision = await writeModel(sb.root, "dense-fp8-v2", {
      ...DENSE_CONFIG,
      quantization_config: quant,
    });
    const { port, proc } = await served();
    expect((await postJson(port, "/update_weights_from_disk", { model_path: revision })).status).toBe(200);
    expect((await ask(port)).body.meta_info.output_token_logprobs.every(([lp]) => lp === null)).toBe(true);
    await stopProc(proc);
  });

  it("holds a request that arrives during the update until the new weights are in", async () => {
    await writeFile(
      join(sb.root, "state", "faults.json"),
      JSON.stringify({ sglang: { loadSeconds: 0.1, msPerToken: 1, ttftMs: 1, updateSeconds: 1 } }),
    );
    const revision = await writeModel(
      sb.root,
      "dense-fp8-v3",
      JSON.parse(await readFile(join(model, "config.json"), "utf8")),
    );
    const { port, proc } = await served();
    const started = Date.now();
    const update = postJson(port, "/update_weights_from_disk", { model_path: revision });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const answered = await ask(port);
    expect(answered.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect((await update).status).toBe(200);
    await writeFile(join(sb.root, "state", "faults.json"), "{}");
    await stopProc(proc);
  });
});
