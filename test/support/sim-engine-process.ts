import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { join } from "node:path";
import { expect } from "vitest";
import { until } from "../../testbench/until.ts";

/*
 * What the simulated engines' tests share (test/testbench/sglang-sim.test.ts, vllm-sim.test.ts): a model
 * directory as the Hub would leave it, an engine process watched by its output, and a port's state.
 */

/** A dense Qwen3's config.json (the fields the simulated engines read). */
export const DENSE_CONFIG = {
  architectures: ["Qwen3ForCausalLM"],
  model_type: "qwen3",
  hidden_size: 2048,
  intermediate_size: 6144,
  num_hidden_layers: 28,
  num_attention_heads: 16,
  num_key_value_heads: 8,
  head_dim: 128,
  vocab_size: 151936,
  max_position_embeddings: 40960,
  eos_token_id: 151645,
};

/** A Qwen3 MoE's config.json. */
export const MOE_CONFIG = {
  architectures: ["Qwen3MoeForCausalLM"],
  model_type: "qwen3_moe",
  hidden_size: 4096,
  intermediate_size: 12288,
  moe_intermediate_size: 1536,
  num_experts: 128,
  num_hidden_layers: 48,
  num_attention_heads: 64,
  num_key_value_heads: 4,
  head_dim: 128,
  vocab_size: 151936,
  max_position_embeddings: 262144,
  eos_token_id: 151645,
};

/** `<root>/models/<name>` with its config.json, and ModelOpt's hf_quant_config.json for an NVFP4 one. */
export async function writeModel(root: string, name: string, config: object, nvfp4 = false): Promise<string> {
  const dir = join(root, "models", name);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, "config.json"), JSON.stringify(config));
  if (nvfp4) {
    await writeFile(
      join(dir, "hf_quant_config.json"),
      JSON.stringify({
        producer: { name: "modelopt", version: "0.37.0" },
        quantization: { quant_algo: "NVFP4", kv_cache_quant_algo: null, group_size: 16 },
      }),
    );
  }
  return dir;
}

export interface Proc {
  child: ChildProcess;
  output: () => string;
  waitFor: (pattern: RegExp, timeoutMs?: number) => Promise<void>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Every process spawnProc started and that has not exited: a test file SIGKILLs them in afterAll. */
export const running = new Set<ChildProcess>();

/** Starts a process and collects its output (stdout and stderr together). */
export function spawnProc(cmd: string, args: string[], env: Record<string, string> = {}): Proc {
  const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  running.add(child);
  let out = "";
  child.stdout?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => {
    child.on("exit", () => running.delete(child));
    // "close" comes once the process has exited and its output pipes are drained
    child.on("close", (code, signal) => res({ code, signal }));
  });
  const waitFor = async (pattern: RegExp, timeoutMs = 8000) => {
    await until(
      () => {
        if (pattern.test(out)) return true;
        if (child.exitCode !== null)
          throw new Error(`process exited (${child.exitCode}) before ${pattern}:\n${out}`);
        return false;
      },
      { what: `${pattern}`, timeoutMs, intervalMs: 20 },
    ).catch((error: Error) => {
      throw new Error(`${error.message}:\n${out}`);
    });
  };
  return { child, output: () => out, waitFor, exited };
}

/** SIGTERM, then its exit code (or the code it had already exited with). */
export async function stopProc(p: Proc): Promise<number | null> {
  if (p.child.exitCode !== null) return p.child.exitCode;
  p.child.kill("SIGTERM");
  return (await p.exited).code;
}

/**
 * The rows of the last "Serving Benchmark Result" block a benchmark client printed (SGLang's
 * bench_serving and `vllm bench serve` share its layout): label (with its colon) → value, each row
 * checked to be `{label:<40} {value}`.
 */
export function summaryRows(output: string): Map<string, string> {
  const lines = output.split("\n");
  const start = lines.indexOf("============ Serving Benchmark Result ============");
  expect(start).toBeGreaterThan(0);
  const values = new Map<string, string>();
  for (const line of lines.slice(start + 1)) {
    if (line === "=".repeat(50)) break;
    if (/^-+[A-Za-z]/.test(line)) continue;
    expect(line.slice(40, 41), line).toBe(" ");
    values.set(line.slice(0, 40).trim(), line.slice(41).trim());
  }
  return values;
}

/** Whether something accepts connections on the port (loopback). */
export function portOpen(port: number): Promise<boolean> {
  return new Promise((res) => {
    const s = connect({ host: "127.0.0.1", port });
    s.once("connect", () => {
      s.destroy();
      res(true);
    });
    s.once("error", () => res(false));
  });
}
