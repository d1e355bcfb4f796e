import { describe, expect, it } from "vitest";
import { engineCacheDir } from "../../src/plan/engine-caches.ts";
import { makePlan } from "../../src/plan/make-plan.ts";
import type { FlagChoice, SwapPlan } from "../../src/plan/types.ts";
import { planInput } from "./plan-fixtures.ts";

/*
 * The engines' compile caches (issue #31): every unit points its engine's cache variables at one
 * directory per key (engine build, GPU architecture, model revision, the flags that choose kernels), so a
 * restart, a rollback or a re-swap of the same key starts warm, and a change of any of them starts cold
 * rather than loading kernels compiled for something else.
 */

const plan = makePlan(planInput("qwen3.5-moe-nvfp4", "8x-rtx-pro-6000-blackwell"));
const dirOf = (p: SwapPlan, flags: readonly FlagChoice[] = p.flags) => engineCacheDir(p, flags)!;
const withFlag = (setting: string, value: string) =>
  plan.flags.map((f) => (f.setting === setting ? { ...f, value } : f));

describe("compile caches", () => {
  it("sets every cache variable of the engine into one directory of its key, under one comment", () => {
    const dir = dirOf(plan);
    expect(dir).toMatch(
      /^\/models\/\.modelswap\/caches\/sglang-43da92d5c0ff-sm120-[0-9a-f]{12}-[0-9a-f]{8}$/,
    );
    expect(dir).toContain(`-${plan.model.sha.slice(0, 12)}-`);
    const lines = plan.unitText.split("\n");
    const first = lines.findIndex((l) => l.startsWith("Environment=TRITON_CACHE_DIR="));
    expect(lines[first - 1]).toMatch(
      /^# compile caches \(Triton, torch\.compile, FlashInfer, DeepGEMM…\) kept/,
    );
    const vars = lines
      .slice(first)
      .filter((l) => l.startsWith("Environment="))
      .map((l) => l.slice("Environment=".length));
    for (const [name, sub] of [
      ["TRITON_CACHE_DIR", "triton"],
      ["TORCHINDUCTOR_CACHE_DIR", "inductor"],
      ["FLASHINFER_WORKSPACE_BASE", "flashinfer"],
      ["SGLANG_DG_CACHE_DIR", "deep_gemm"],
    ])
      expect(vars).toContain(`${name}=${dir}/${sub}`);
    // one comment for all of them
    expect(plan.unitText.match(/# compile caches/g)).toHaveLength(1);
  });

  it("keys by what chooses the kernels, not by where the model is served", () => {
    const dir = dirOf(plan);
    expect(dirOf(plan, withFlag("port", "30001"))).toBe(dir);
    expect(dirOf(plan, withFlag("mem-fraction-static", "0.7"))).toBe(dir);
    expect(dirOf(plan, [...plan.flags].reverse())).toBe(dir);
    expect(dirOf(plan, withFlag("moe-runner-backend", "triton"))).not.toBe(dir);
    expect(dirOf(plan, withFlag("tp-size", "4"))).not.toBe(dir);
    expect(dirOf({ ...plan, model: { ...plan.model, sha: "f".repeat(40) } })).not.toBe(dir);
    expect(dirOf({ ...plan, engine: { ...plan.engine!, commit: "a".repeat(40) } })).toMatch(
      /sglang-aaaaaaaaaaaa-/,
    );
    const hopper = plan.host.gpus.map((g) => ({ ...g, computeCapability: { major: 9, minor: 0 } }));
    expect(dirOf({ ...plan, host: { ...plan.host, gpus: hopper } })).toMatch(/-sm90-/);
  });

  it("gives vLLM units its torch.compile cache root too", () => {
    const input = planInput("llama-bf16-small", "h200-1gpu");
    const vllm = makePlan({
      ...input,
      engineKind: "vllm",
      hostConfig: { ...input.hostConfig, venv: "/opt/vllm/.venv" },
    });
    expect(vllm.unitText).toMatch(
      /^Environment=VLLM_CACHE_ROOT=\/models\/\.modelswap\/caches\/vllm-[0-9a-f]{12}-sm90-[0-9a-f]{12}-[0-9a-f]{8}\/vllm$/m,
    );
  });
});
