import { describe, expect, it } from "vitest";
import { sglangEngine } from "../../src/engine/sglang/sglang-engine.ts";
import { describeStartup } from "../../src/engine/startup-phases.ts";
import { vllmEngine } from "../../src/engine/vllm/vllm-engine.ts";

/**
 * Where a server's start went, read from the engines' own timing lines as they print them (the lines
 * below are SGLang's and vLLM's formats, from their sources and published logs: src/engine/*\/startup-lines.ts).
 */
describe("SGLang's start-up phases", () => {
  it("takes the slowest rank's weights and graph capture, and adds a draft model's to the target's", () => {
    const journal = [
      "Started sglang-gpu-1.service - SGLang.",
      "[2026-02-26 05:20:01 TP0] Load weight begin. avail mem=283.62 GB",
      "[2026-02-26 05:24:09 TP4] Load weight end. elapsed=228.09 s, type=GlmMoeDsaForCausalLM, dtype=torch.bfloat16, avail mem=194.04 GB, mem usage=89.58 GB.",
      "[2026-02-26 05:24:09 TP5] Load weight end. elapsed=231.50 s, type=GlmMoeDsaForCausalLM, dtype=torch.bfloat16, avail mem=194.04 GB, mem usage=89.58 GB.",
      "[2026-02-26 05:25:44 TP0] Load weight end. elapsed=49.46 s, type=GlmMoeDsaForCausalLMNextN, avail mem=180.1 GB, mem usage=5.1 GB.",
      "[2026-02-26 05:26:00 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=20.1 GB",
      "[2026-02-26 05:26:09 TP0] Capture cuda graph end. Time elapsed: 9.20 s. mem usage=1.52 GB. avail mem=18.5 GB.",
      "[2026-02-26 05:26:09 TP1] Capture cuda graph end. Time elapsed: 9.40 s. mem usage=1.52 GB. avail mem=18.5 GB.",
      "[2026-02-26 05:26:30 TP0] Capture draft decode CUDA graph end. elapsed=20.00 s, mem usage=0.4 GB, avail mem=18.1 GB.",
      "The server is fired up and ready to roll!",
    ];
    expect(sglangEngine.startupPhases(journal)).toEqual({
      weightsSeconds: 231.5 + 49.46,
      graphsSeconds: 29.4,
    });
  });

  it("says nothing it did not read: no timing line, no phase", () => {
    expect(
      sglangEngine.startupPhases(["[2026-02-26 05:20:01 TP0] Load weight begin. avail mem=283.62 GB"]),
    ).toEqual({});
  });
});

describe("vLLM's start-up phases", () => {
  it("takes the slowest worker's weights, torch.compile and graph capture", () => {
    const journal = [
      "(VllmWorker rank=0 pid=201) INFO 03-20 10:00:12 [default_loader.py:267] Loading weights took 12.34 seconds",
      "(VllmWorker rank=1 pid=202) INFO 03-20 10:00:13 [default_loader.py:267] Loading weights took 13.01 seconds",
      "(VllmWorker rank=0 pid=201) INFO 03-20 10:00:40 [monitor.py:34] torch.compile takes 24.18 s in total",
      "(EngineCore_DP0 pid=200) INFO 03-20 10:00:52 [gpu_model_runner.py:3480] Graph capturing finished in 9 secs, took 0.52 GiB",
      "(APIServer pid=100) INFO:     Application startup complete.",
    ];
    expect(vllmEngine.startupPhases(journal)).toEqual({
      weightsSeconds: 13.01,
      compileSeconds: 24.18,
      graphsSeconds: 9,
    });
  });
});

describe("the start for people", () => {
  it("names each timed phase and the rest of the load, in the one duration form", () => {
    expect(describeStartup({ weightsSeconds: 61.2, compileSeconds: 24.18, graphsSeconds: 9 }, 125.4)).toBe(
      "weights 1 min 1 s · torch.compile 24 s · CUDA graphs 9 s · the rest 31 s (process start, memory pools, warm-up)",
    );
  });

  it("says nothing when the engine timed nothing, and no rest when the phases are the whole load", () => {
    expect(describeStartup({}, 30)).toBeUndefined();
    expect(describeStartup({ weightsSeconds: 2 }, 2)).toBe("weights 2 s");
  });
});
