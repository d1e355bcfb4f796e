import { BENCH_WEIGHT_SCALE, type Bench, type BenchOptions, SIM_ENGINES } from "../../testbench/bench.ts";
import { makeModel } from "../../testbench/hub/index.ts";

/*
 * What the in-place tests share (e2e/in-place.test.ts, faults/crash-in-place.test.ts): one H200 host
 * behind a real HAProxy serving the seed's model, and one repository of an FP8 checkpoint at several
 * commits of the same files (new revisions a swap can load into the running SGLang).
 */

export const IN_PLACE_MODEL = "bench-inplace/Qwen3-8B-FP8";

/** The bench's options for `host` (for useSwapBench), with the file's own swap settings. */
export function inPlaceBenchOptions(
  host: string,
  swaps: BenchOptions["swaps"],
  startBot: boolean,
): BenchOptions & { startBot: boolean } {
  return {
    swaps: { pollSeconds: 0.2, cardUpdateSeconds: 1, ...swaps },
    engineTiming: SIM_ENGINES,
    weightScale: BENCH_WEIGHT_SCALE,
    hosts: [
      {
        name: host,
        gpus: "h200-1gpu",
        serving: { preset: "llama-bf16-small" },
        frontDoor: { holdSeconds: 60 },
        waitHealthy: true,
      },
    ],
    startBot,
  };
}

/** IN_PLACE_MODEL on the bench's Hub at these commits (`main` and the others by name). */
export function addInPlaceModel(bench: Bench, revisions: Record<string, string>): void {
  bench.hub.addModel(
    makeModel("qwen3-fp8-dense", {
      id: IN_PLACE_MODEL,
      gated: false,
      scale: BENCH_WEIGHT_SCALE,
      revisions,
    }),
  );
}
