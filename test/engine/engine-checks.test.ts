import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LOADED, runBench, SINGLE_STREAM } from "../../src/engine/bench-serving.ts";
import { findFatalLine } from "../../src/engine/fatal-lines.ts";
import { runSanity } from "../../src/engine/sanity.ts";
import { sglangEngine } from "../../src/engine/sglang/sglang-engine.ts";
import { LocalTransport } from "../../src/host/local-transport.ts";
import { sh } from "../../src/host/shell-quote.ts";
import { renderBenchmarkComparison } from "../../src/reporter/benchmark-table.ts";
import { freePort } from "../../testbench/free-port.ts";
import { createSimGpuHost, type GpuSetName, type SimGpuHost } from "../../testbench/gpu-host/index.ts";
import { type ModelPreset, makeModel } from "../../testbench/hub/index.ts";
import { until } from "../../testbench/until.ts";
import { tempDir } from "../support/tmp.ts";

// The engine-facing checks of the health, sanity and benchmark stages against the simulated SGLang
// engine: real servers (started directly, like test/testbench/sglang-sim.test.ts), real curl and
// bench_serving runs through a local bash transport, real journals from the simulated systemd.

const FAST = { loadSeconds: 0.2, msPerToken: 0.3, ttftMs: 1, warmupMs: 50 };

const transport = new LocalTransport({ hostName: "t", commandTimeoutMs: 20_000, extraPath: [] });
const exec = transport.exec.bind(transport);

interface Server {
  port: number;
  child: ChildProcess;
  output: () => string;
}

const hosts: { host: SimGpuHost; remove: () => Promise<void> }[] = [];
const servers: Server[] = [];

async function simHost(gpus: GpuSetName): Promise<SimGpuHost> {
  const dir = await tempDir("engine-checks-");
  const host = await createSimGpuHost({ root: dir.path, name: "gpu-t", gpus });
  await host.setFault("sglang", FAST);
  hosts.push({ host, remove: dir.remove });
  return host;
}

/** A model directory as `hf download` leaves it, from a simulated Hub preset (weights omitted: the
 * engine sizes them from the index). */
async function writeModel(host: SimGpuHost, preset: ModelPreset): Promise<string> {
  const model = makeModel(preset);
  const dir = join(host.modelsDir, model.id.replace("/", "--"));
  for (const file of model.files) {
    if (file.content === undefined) continue;
    await mkdir(dirname(join(dir, file.path)), { recursive: true });
    await writeFile(join(dir, file.path), file.content);
  }
  return dir;
}

async function startServer(host: SimGpuHost, model: string, extra: string[] = []): Promise<Server> {
  const port = await freePort();
  const child = spawn(
    join(host.venvDir, "bin", "python"),
    ["-m", "sglang.launch_server", "--model-path", model, "--port", String(port), ...extra],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  child.stdout?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const server = { port, child, output: () => out };
  servers.push(server);
  await until(
    () => {
      if (child.exitCode !== null) throw new Error(`server exited (${child.exitCode}):\n${out}`);
      return out.includes("The server is fired up and ready to roll!");
    },
    { what: "the server to start", timeoutMs: 10_000, intervalMs: 20 },
  ).catch((error: Error) => {
    throw new Error(`${error.message}:\n${out}`);
  });
  return server;
}

afterAll(async () => {
  for (const s of servers) s.child.kill("SIGKILL");
  for (const h of hosts) {
    await h.host.stop();
    await h.remove();
  }
  await transport.close();
});

describe("sanity and benchmark on a healthy model (1x H200)", () => {
  let host: SimGpuHost;
  let server: Server;
  let model: string;

  beforeAll(async () => {
    host = await simHost("h200-1gpu");
    model = await writeModel(host, "llama-bf16-small");
    server = await startServer(host, model, ["--served-model-name", "llama-1b"]);
  });

  it("passes sanity, and found no fatal line in the start-up log", async () => {
    const report = await runSanity(sglangEngine, exec, server.port, { timeoutMs: 10_000 });
    expect(report.ok, report.summary).toBe(true);
    expect(report.prompts.map((p) => p.verdict)).toEqual(["ok", "ok", "ok", "ok"]);
    expect(report.prompts[0]).toMatchObject({ output: " Paris.", nullLogprobs: 0, nanLogprobs: 0 });
    // The open prompt yields a longer continuation that is not a loop.
    const story = report.prompts[3];
    expect(story?.tokens).toBeGreaterThanOrEqual(16);
    expect(story?.topTokenShare).toBeLessThan(0.5);
    expect(findFatalLine(server.output().split("\n"))).toBeUndefined();
  });

  it("fails sanity when the engine reports sampling errors, and the log shows the fatal line", async () => {
    await host.setFault("sglang", { ...FAST, mode: "sampling-errors" });
    try {
      const report = await runSanity(sglangEngine, exec, server.port, { timeoutMs: 10_000 });
      expect(report.ok).toBe(false);
      const known = report.prompts.filter((p) => p.expected !== undefined);
      expect(known.every((p) => p.verdict === "wrong-answer")).toBe(true);
      expect(report.summary).toMatch(/^[34]\/4 prompts failed/);
      expect(findFatalLine(server.output().split("\n"))).toMatchObject({
        kind: "sampling",
        line: expect.stringContaining("Detected errors during sampling! NaN in the logits."),
      });
    } finally {
      await host.setFault("sglang", FAST);
    }
  });

  it("parses a real bench_serving run at concurrency 1 and 4", async () => {
    // tokens slow enough that decoding, not a request's own overhead, sets the pace: at FAST's 0.3 ms a
    // token (16 tokens: 5 ms), one stream beat four under the whole suite's load (636.5 against 644.1 tok/s)
    await host.setFault("sglang", { ...FAST, msPerToken: 4 });
    const base = { venv: host.venvDir, port: server.port, model, seed: 7 };
    const single = await runBench(sglangEngine, exec, {
      ...base,
      concurrency: 1,
      numPrompts: 4,
      inputLen: 64,
      outputLen: 16,
    });
    const loaded = await runBench(sglangEngine, exec, {
      ...base,
      concurrency: 4,
      numPrompts: 12,
      inputLen: 64,
      outputLen: 16,
    });
    expect(single).toMatchObject({
      backend: "sglang",
      maxConcurrency: 1,
      successfulRequests: 4,
      requested: 4,
      totalInputTokens: 4 * 64,
      totalOutputTokens: 4 * 16,
    });
    expect(loaded).toMatchObject({ maxConcurrency: 4, successfulRequests: 12, totalOutputTokens: 12 * 16 });
    for (const r of [single, loaded]) {
      expect(r.outputThroughput).toBeGreaterThan(0);
      expect(r.meanTtftMs).toBeGreaterThan(0);
      expect(r.p99TtftMs).toBeGreaterThanOrEqual(r.medianTtftMs ?? 0);
      expect(r.meanTpotMs).toBeGreaterThan(0);
      expect(r.meanE2eMs).toBeGreaterThan(r.meanTtftMs ?? 0);
    }
    // Four streams at once deliver more tokens per second than one (the sim batches them), on a machine
    // with the CPU for it: a clean-clone run with a bench beside it starved the sim (206 against 278
    // tok/s, 2026-12-07), so by a margin of the single stream's figure, not always more.
    expect(loaded.outputThroughput).toBeGreaterThan((single.outputThroughput ?? 0) * 0.5);
    const msg = renderBenchmarkComparison({ single, loaded });
    expect(msg.text).toMatch(
      /^Benchmark: [\d.]+ output tok\/s at 1 stream, [\d.]+ output tok\/s at 4 streams/,
    );
    await host.setFault("sglang", FAST);
  });

  it("runs the standard settings on the simulated engine: every prompt answered at each concurrency", async () => {
    const base = { venv: host.venvDir, port: server.port, model };
    const [single, loaded] = [
      await runBench(sglangEngine, exec, { ...base, ...SINGLE_STREAM }),
      await runBench(sglangEngine, exec, { ...base, ...LOADED }),
    ];
    expect(single).toMatchObject({ maxConcurrency: 1, successfulRequests: SINGLE_STREAM.numPrompts });
    expect(loaded).toMatchObject({
      maxConcurrency: LOADED.concurrency,
      successfulRequests: LOADED.numPrompts,
    });
    expect(loaded.totalInputTokens).toBe(LOADED.numPrompts * LOADED.inputLen);
  });

  it("fails the benchmark clearly when nothing listens on the port", async () => {
    const port = await freePort();
    await expect(
      runBench(sglangEngine, exec, {
        venv: host.venvDir,
        port,
        model,
        concurrency: 1,
        numPrompts: 1,
        inputLen: 8,
        outputLen: 4,
        seed: 1,
      }),
    ).rejects.toMatchObject({
      code: "BENCH_FAILED",
      message: expect.stringContaining("Cannot connect to host 127.0.0.1"),
      fix: expect.stringContaining("could not reach the server"),
    });
  });
});

describe("sanity of NVFP4 on 8x RTX PRO 6000 Blackwell (sm_120)", () => {
  let host: SimGpuHost;
  let broken: Server;
  let fixed: Server;

  beforeAll(async () => {
    host = await simHost("8x-rtx-pro-6000-blackwell");
    const model = await writeModel(host, "qwen3.5-moe-nvfp4");
    [broken, fixed] = await Promise.all([
      startServer(host, model, ["--tp", "4", "--quantization", "modelopt_fp4"]),
      startServer(host, model, [
        "--tp",
        "4",
        "--base-gpu-id",
        "4",
        "--quantization",
        "modelopt_fp4",
        "--moe-runner-backend",
        "flashinfer_cutlass",
        "--fp4-gemm-backend",
        "flashinfer_cudnn",
      ]),
    ]);
  });

  it("without the FlashInfer backend flags: healthy, yet every prompt is NaN ('!!!!', null logprobs)", async () => {
    const health = await exec(
      sh`curl -sS -o /dev/null -w '%{http_code}' ${`http://127.0.0.1:${broken.port}/health`}`,
    );
    expect(health.stdout).toBe("200");
    const report = await runSanity(sglangEngine, exec, broken.port, { timeoutMs: 10_000 });
    expect(report.ok).toBe(false);
    for (const p of report.prompts) {
      expect(p).toMatchObject({
        verdict: "nan",
        output: "!".repeat(32),
        tokens: 32,
        nullLogprobs: 32,
        nanLogprobs: 0,
        topTokenShare: 1,
      });
    }
    expect(report.summary).toContain('argmax fell to token 0, "!!!!"');
  });

  it("with --moe-runner-backend flashinfer_cutlass --fp4-gemm-backend flashinfer_cudnn: ok", async () => {
    const report = await runSanity(sglangEngine, exec, fixed.port, { timeoutMs: 10_000 });
    expect(report.ok, report.summary).toBe(true);
    expect(report.prompts[1]?.output).toContain("Jupiter");
  });
});

describe("fatal lines in a crashed unit's journal", () => {
  it("names the cause: CUDA OOM, and NVFP4 unsupported on an H200", async () => {
    const host = await simHost("h200-1gpu");
    const dense = await writeModel(host, "llama-bf16-small");
    const nvfp4 = await writeModel(host, "qwen3.5-moe-nvfp4");
    const [oomPort, nvPort] = [await freePort(), await freePort()];
    await host.setFault("sglang", { ...FAST, ports: { [String(oomPort)]: { mode: "oom" } } });
    const unit = (model: string, port: number) =>
      [
        "[Unit]",
        "Description=SGLang test",
        "[Service]",
        `ExecStart=${host.venvDir}/bin/python -m sglang.launch_server --model-path ${model} --port ${port}`,
        "Restart=no",
        "[Install]",
        "WantedBy=multi-user.target",
        "",
      ].join("\n");
    await host.installUnit("sglang-oom", unit(dense, oomPort));
    await host.installUnit("sglang-nv", unit(nvfp4, nvPort));
    await host.systemctl("start", "sglang-oom", "sglang-nv");
    for (const name of ["sglang-oom", "sglang-nv"]) {
      await until(async () => (await host.unitState(name)).activeState === "failed", {
        what: `${name} to fail`,
        timeoutMs: 10_000,
      }).catch(async (error: Error) => {
        throw new Error(`${error.message}:\n${await host.journal(name)}`);
      });
    }
    // Read the journal the way the health stage does: journalctl on the host.
    const read = async (unitName: string) =>
      (await host.journalctl("-u", unitName, "--no-pager", "-o", "cat")).stdout.split("\n");
    expect(findFatalLine(await read("sglang-oom"))).toEqual({
      kind: "oom",
      line: expect.stringMatching(/^torch\.OutOfMemoryError: CUDA out of memory\. Tried to allocate/),
    });
    expect(findFatalLine(await read("sglang-nv"))).toEqual({
      kind: "traceback",
      line: "ValueError: The quantization method modelopt_fp4 is not supported for the current GPU. Minimum capability: 100. Current capability: 90.",
    });
  });
});

describe("SGLang's in-place update command (update_weights_from_disk) against the simulated engine", () => {
  const update = sglangEngine.inPlace!;
  /** The command's answer: the engine's JSON, then the HTTP status on its own line. */
  const answerOf = (stdout: string) => {
    const lines = stdout.trimEnd().split("\n");
    return {
      status: lines.at(-1),
      body: JSON.parse(lines.slice(0, -1).join("\n")) as Record<string, unknown>,
    };
  };
  const servedId = async (port: number) =>
    ((await (await fetch(`http://127.0.0.1:${port}/v1/models`)).json()) as { data: { id: string }[] }).data[0]
      ?.id;

  it("loads a new revision's directory into the running server: 200, the same process serves the new path", async () => {
    const host = await simHost("h200-1gpu");
    const model = await writeModel(host, "llama-bf16-small");
    const revision = `${model}-v2`;
    await exec(sh`cp -r ${model} ${revision}`);
    const server = await startServer(host, model);
    const result = await exec(update.updateCommand(server.port, revision, 60));
    expect(answerOf(result.stdout)).toEqual({
      status: "200",
      body: { success: true, message: "Succeeded to update model weights.", num_paused_requests: 0 },
    });
    expect(await servedId(server.port)).toBe(revision);
    expect(server.child.exitCode).toBeNull();
  });

  it("weights of another architecture: 400 with the engine's reason, and the old weights still serve", async () => {
    const host = await simHost("h200-1gpu");
    const model = await writeModel(host, "llama-bf16-small");
    const other = await writeModel(host, "qwen3-fp8-dense");
    const server = await startServer(host, model);
    const before = await servedId(server.port);
    const answer = answerOf((await exec(update.updateCommand(server.port, other, 60))).stdout);
    expect(answer.status).toBe("400");
    expect(answer.body).toMatchObject({
      success: false,
      message: expect.stringMatching(/^Failed to update weights: /),
    });
    expect(await servedId(server.port)).toBe(before);
    const sanity = await runSanity(sglangEngine, exec, server.port, { timeoutMs: 10_000 });
    expect(sanity.ok, sanity.summary).toBe(true);
  });

  it("prints 000 when nothing listens", async () => {
    const port = await freePort();
    const result = await exec(update.updateCommand(port, "/nowhere", 5));
    expect(result.stdout.trim().split("\n").at(-1)).toBe("000");
  });
});
