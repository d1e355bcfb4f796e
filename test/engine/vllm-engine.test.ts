import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runBench } from "../../src/engine/bench-serving.ts";
import { runSanity } from "../../src/engine/sanity.ts";
import { vllmEngine } from "../../src/engine/vllm/vllm-engine.ts";
import { LocalTransport } from "../../src/host/local-transport.ts";
import { freePort } from "../../testbench/free-port.ts";
import { createSimGpuHost, type SimGpuHost } from "../../testbench/gpu-host/index.ts";
import { installVllm } from "../../testbench/gpu-host/vllm-install.ts";
import { makeModel } from "../../testbench/hub/index.ts";
import { type Proc, running, spawnProc, stopProc } from "../support/sim-engine-process.ts";
import { tempDir } from "../support/tmp.ts";

/*
 * vLLM's run-time half (src/engine/vllm/) against the simulated vLLM 0.18 (testbench/gpu-host/
 * VLLM.md): a real `vllm serve` process, real curl and `vllm bench serve` runs through a local bash
 * transport. What a swap's health wait, sanity check and benchmark, the monitor and /llm status ask.
 */

const FAST = { loadSeconds: 0.2, msPerToken: 0.3, ttftMs: 1 };
const transport = new LocalTransport({ hostName: "t", commandTimeoutMs: 20_000, extraPath: [] });
const exec = transport.exec.bind(transport);

let host: SimGpuHost;
let model: string;
let removeDir: () => Promise<void>;

beforeAll(async () => {
  const dir = await tempDir("vllm-engine-");
  removeDir = dir.remove;
  host = await createSimGpuHost({ root: dir.path, name: "gpu-v", gpus: "h200-1gpu" });
  await installVllm(host.root);
  await host.setFault("vllm", FAST);
  const preset = makeModel("llama-bf16-small");
  model = join(host.modelsDir, preset.id.replace("/", "--"));
  for (const file of preset.files) {
    if (file.content === undefined) continue;
    await mkdir(dirname(join(model, file.path)), { recursive: true });
    await writeFile(join(model, file.path), file.content);
  }
});

afterAll(async () => {
  for (const child of running) child.kill("SIGKILL");
  await host?.stop();
  await removeDir?.();
  await transport.close();
});

async function serve(extra: string[] = []): Promise<{ port: number; proc: Proc }> {
  const port = await freePort();
  const proc = spawnProc(join(host.venvDir, "bin", "vllm"), [
    "serve",
    model,
    "--port",
    String(port),
    ...extra,
  ]);
  return { port, proc };
}

describe("vLLM's run-time half against the simulated vLLM", () => {
  let port: number;
  let proc: Proc;

  beforeAll(async () => {
    ({ port, proc } = await serve());
    await proc.waitFor(/Application startup complete\./, 15_000);
  });
  afterAll(async () => {
    await stopProc(proc);
  });

  it("health is a generated token (a 1-token completion), not vLLM's /health, and says so when refused", async () => {
    const probe = await exec(vllmEngine.healthProbe(port, 5));
    expect(probe.stdout.trim()).toBe("200");
    expect(probe.code).toBe(0);
    expect(vllmEngine.healthProbe(port, 5).text).toContain(`http://127.0.0.1:${port}/v1/completions`);
    // the server's access log line may reach the pipe a moment after curl has its answer
    await proc.waitFor(/"POST \/v1\/completions HTTP\/1\.1" 200/, 5000);
    const closed = await freePort();
    const refused = await exec(vllmEngine.healthProbe(closed, 5));
    expect(refused.code).toBe(7);
    expect(vllmEngine.healthFailure(Number(refused.stdout.trim()) || null, refused.code, 5)).toBe(
      "a 1-token /v1/completions: connection refused (nothing listens on the serving port)",
    );
  });

  it("passes sanity: known answers, numeric logprobs, no fatal line in the start-up log", async () => {
    const report = await runSanity(vllmEngine, exec, port, { timeoutMs: 10_000 });
    expect(report.ok, report.summary).toBe(true);
    expect(report.prompts[0]).toMatchObject({ output: expect.stringContaining("Paris"), nanLogprobs: 0 });
    expect(report.prompts.every((p) => p.tokens > 0)).toBe(true);
    expect(vllmEngine.findFatalLine(proc.output().split("\n"))).toBeUndefined();
  });

  it("a NaN model fails sanity although its health probe passes: vLLM's HTTP 500 for NaN logprobs reads as NaN", async () => {
    await host.setFault("vllm", { ...FAST, mode: "nan" });
    try {
      expect((await exec(vllmEngine.healthProbe(port, 5))).stdout.trim()).toBe("200");
      const report = await runSanity(vllmEngine, exec, port, { timeoutMs: 10_000 });
      expect(report.ok).toBe(false);
      expect(report.prompts.map((p) => p.verdict)).toEqual(["nan", "nan", "nan", "nan"]);
      expect(report.prompts[0]?.detail).toMatch(
        /HTTP 500 from \/v1\/completions: vLLM answers so when it cannot write its logprobs as JSON/,
      );
      expect(report.summary).toMatch(/^4\/4 prompts failed \(4 NaN/);
    } finally {
      await host.setFault("vllm", FAST);
    }
  });

  it("runs `vllm bench serve` and reads its summary (the same layout as SGLang's bench_serving)", async () => {
    const result = await runBench(vllmEngine, exec, {
      venv: host.venvDir,
      port,
      model,
      seed: 7,
      concurrency: 2,
      numPrompts: 4,
      inputLen: 64,
      outputLen: 16,
    });
    expect(result.successfulRequests).toBe(4);
    expect(result.outputThroughput).toBeGreaterThan(0);
    expect(result.meanTtftMs).toBeGreaterThan(0);
    expect(
      vllmEngine.benchCommand({
        venv: "/v",
        port,
        model,
        seed: 7,
        concurrency: 2,
        numPrompts: 4,
        inputLen: 64,
        outputLen: 16,
      }).text,
    ).toMatch(/^\/v\/bin\/vllm bench serve --backend vllm --base-url http:\/\/127\.0\.0\.1:\d+ /);
  });
});

describe("what in vLLM's journal means it will not come up", () => {
  it("the engine core's root cause, read through vLLM's log prefix, not the API server's summary", async () => {
    await host.setFault("vllm", { ...FAST, mode: "crash-on-start" });
    try {
      const { proc } = await serve();
      const { code } = await proc.exited;
      expect(code).toBe(1);
      const lines = proc.output().split("\n");
      expect(lines.some((l) => l.includes("RuntimeError: Engine core initialization failed"))).toBe(true);
      expect(vllmEngine.findFatalLine(lines)).toMatchObject({
        kind: "traceback",
        line: expect.stringMatching(/^torch\.AcceleratorError: CUDA error: no kernel image is available/),
      });
    } finally {
      await host.setFault("vllm", FAST);
    }
  });

  it("no room for the KV cache at the memory utilization asked for", async () => {
    const { proc } = await serve(["--gpu-memory-utilization", "0.01"]);
    await proc.exited;
    expect(vllmEngine.findFatalLine(proc.output().split("\n"))?.line).toMatch(
      /^ValueError: No available memory for the cache blocks\. Try increasing `gpu_memory_utilization`/,
    );
  });
});
