import { describe, expect, it } from "vitest";
import type { GpuInfo } from "../../src/gpu/nvidia-smi.ts";
import { estimateVram } from "../../src/plan/choose-tp.ts";
import { whyCold } from "../../src/plan/why-cold.ts";
import { gpusOf } from "./plan-fixtures.ts";

/**
 * Why a swap is cold, from nvidia-smi's per-GPU memory: the seeds' box (8 × RTX PRO 6000, 96 GB) and the
 * 223 GB NVFP4 model at tp 8 (27.3 GiB/GPU of weights with the planner's 5 %).
 */
const SEEDS = 223e9;

/** The first `busy` GPUs each hold `usedGiB` (the model serving now), the rest idle. */
function box(busy: number, usedGiB: number): GpuInfo[] {
  return gpusOf("8x-rtx-pro-6000-blackwell").map((g, i) => {
    if (i >= busy) return g;
    const used = Math.round(usedGiB * 1024);
    return { ...g, memoryUsedMiB: used, memoryFreeMiB: g.memoryFreeMiB - used };
  });
}

describe("why a swap is cold", () => {
  it("an old model at SGLang's default memory fraction fills its GPUs: both cannot run at once", () => {
    const gpus = box(8, 81.3);
    const why = whyCold(gpus, estimateVram(SEEDS, gpus, 8));
    expect(why).toMatch(/holds up to 81\.3 GiB of each of its 8 GPUs/);
    expect(why).toMatch(
      /leaving 13\.\d GiB; the new model needs 27\.3 GiB\/GPU for its weights alone, and no GPU is idle: both cannot run at once/,
    );
  });

  it("an old model started at mem-fraction 0.45 leaves room: blue/green on shared GPUs would fit, and the line says modelswap does not run it yet", () => {
    const gpus = box(8, 43);
    const why = whyCold(gpus, estimateVram(SEEDS, gpus, 8));
    expect(why).toMatch(
      /leaving 52\.\d GiB free on each: the new model's 27\.3 GiB\/GPU of weights and a KV cache fit beside it \(blue\/green on shared GPUs\), which modelswap does not run yet/,
    );
  });

  it("an old model on 4 of 8 GPUs leaves 4 idle: enough for a tp 4 model beside it", () => {
    const gpus = box(4, 81.3);
    const why = whyCold(gpus, estimateVram(SEEDS, gpus, 4));
    expect(why).toMatch(
      /4 GPUs are idle: enough for the new model at tp 4 beside it \(blue\/green on spare GPUs\)/,
    );
    // at tp 8 the 4 idle ones are not enough, and the busy ones are full
    expect(whyCold(gpus, estimateVram(SEEDS, gpus, 8))).toMatch(
      /and only 4 GPUs are idle: both cannot run at once/,
    );
  });

  it("a host where nothing holds the GPUs (nothing served, or it crashed) says so", () => {
    const gpus = box(0, 0);
    expect(whyCold(gpus, estimateVram(SEEDS, gpus, 8))).toBe(
      "no GPU holds a model now: nothing is served while the new one loads anyway",
    );
  });
});
