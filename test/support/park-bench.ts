import {
  BENCH_WEIGHT_SCALE,
  type Bench,
  type BenchOptions,
  SEED_BOX_FREE_DISK_BYTES,
  SIM_ENGINES,
} from "../../testbench/bench.ts";
import { makeModel } from "../../testbench/hub/index.ts";

/*
 * What the parking tests share (e2e/sglang-park.test.ts, e2e/vllm-sleep.test.ts): one host behind a real
 * HAProxy with a standby slot, swaps.sleepMode on, and three checkpoints of the seeds' real 223 GB model
 * (bench.weightScale): none fits beside another on the GPUs, so every swap is cold and can park.
 */

export const PARK_MODELS = {
  /** The first swap's: it starts a parkable unit. */
  A: "nvidia/Qwen3.5-397B-A17B-NVFP4",
  /** One that answers NaN where a test sets the fault `{ models: { "NVFP4-nan": … } }`. */
  B: "nvidia/Qwen3.5-397B-A17B-NVFP4-nan",
  /** One that passes. */
  C: "nvidia/Qwen3.5-397B-A17B-NVFP4-next",
} as const;

export const PARK_HOST = "gpu-1";

/** The bench's options (for useSwapBench); `vllm: "only"` serves every swap with vLLM. */
export function parkBenchOptions(engine: "sglang" | "vllm"): BenchOptions & { startBot: true } {
  return {
    swaps: { pollSeconds: 0.2, cardUpdateSeconds: 1, healthTimeoutSeconds: 20, sleepMode: true },
    // the clients' answers are as long in seconds as the tests say: the sims' own token pace
    engineTiming: SIM_ENGINES,
    weightScale: BENCH_WEIGHT_SCALE,
    hosts: [
      {
        name: PARK_HOST,
        gpus: "8x-rtx-pro-6000-blackwell",
        serving: { preset: "qwen3-fp8-dense" },
        ...(engine === "vllm" ? { vllm: "only" as const } : {}),
        diskFreeBytes: SEED_BOX_FREE_DISK_BYTES,
        frontDoor: { holdSeconds: 60, standby: true },
        waitHealthy: true,
      },
    ],
    startBot: true,
  };
}

/** The three checkpoints on the bench's Hub (call before the first swap). */
export function addParkModels(bench: Bench): void {
  for (const id of Object.values(PARK_MODELS))
    bench.hub.addModel(makeModel("qwen3.5-moe-nvfp4", { id, gated: false, scale: BENCH_WEIGHT_SCALE }));
}
