import { describe, expect, it } from "vitest";
import type { GpuInfo } from "../../src/gpu/nvidia-smi.ts";
import { estimateVram } from "../../src/plan/choose-tp.ts";
import { type ClientModeInput, chooseClientMode } from "../../src/plan/client-mode.ts";
import { whyCold } from "../../src/plan/why-cold.ts";
import { gpusOf } from "./plan-fixtures.ts";

/**
 * Blue/green or cold, from nvidia-smi's per-GPU memory: the seeds' box (8 × RTX PRO 6000, 96 GB) and the
 * 223 GB NVFP4 model (27.3 GiB/GPU of weights at tp 8 with the planner's 5 %).
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

function mode(gpus: GpuInfo[], tp: number, standby: ClientModeInput["standby"] = { port: 30001 }) {
  return chooseClientMode({
    gpus,
    vram: estimateVram(SEEDS, gpus, tp),
    standby,
    sharedBenchmark: "after-flip",
    flipBackSeconds: 300,
  });
}

describe("the plan's client mode", () => {
  it("an old model at SGLang's default memory fraction fills its GPUs: cold, and the numbers say why", () => {
    const chosen = mode(box(8, 81.3), 8);
    expect(chosen.mode).toBe("cold");
    expect(chosen.why).toMatch(/holds up to 81\.3 GiB of each of its 8 GPUs/);
    expect(chosen.why).toMatch(
      /leaving 13\.\d GiB; the new model at tp 8 needs 27\.3 GiB\/GPU for its weights, 14\.\d GiB SGLang keeps free and a KV cache of at least 4\.\d GiB, and no GPU is idle: both cannot run at once/,
    );
  });

  it("an old model on 4 of 8 GPUs leaves 4 idle: a tp 4 model runs blue/green on them, at its full KV cache", () => {
    const chosen = mode(box(4, 81.3), 4);
    expect(chosen).toMatchObject({
      mode: "bluegreen",
      blueGreen: { gpus: "spare", devices: [4, 5, 6, 7], port: 30001, benchmark: "before-flip" },
    });
    if (chosen.mode !== "bluegreen") throw new Error("not blue/green");
    // the driver's few hundred MiB on an idle GPU aside, the KV cache it would have alone
    expect(chosen.blueGreen.fullKvPerGpuBytes - chosen.blueGreen.kvPerGpuBytes).toBeLessThan(2 ** 30);
    expect(chosen.why).toMatch(/GPUs 4,5,6,7 are idle: the new model \(tp 4, 54\.5 GiB\/GPU of weights\)/);
    // at tp 8 the 4 idle ones are not enough, and the busy ones are full
    expect(mode(box(4, 81.3), 8)).toMatchObject({ mode: "cold" });
    expect(mode(box(4, 81.3), 8).why).toMatch(/and only 4 GPUs are idle: both cannot run at once/);
  });

  it("an old model started at mem-fraction 0.45 leaves room: blue/green sharing its GPUs, with the smaller KV cache said", () => {
    const chosen = mode(box(8, 43), 8);
    expect(chosen).toMatchObject({
      mode: "bluegreen",
      blueGreen: { gpus: "shared", benchmark: "after-flip" },
    });
    if (chosen.mode !== "bluegreen") throw new Error("not blue/green");
    expect(chosen.blueGreen.devices).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    // ≈ 0.85 of 95.6 GiB less the 43 GiB used, 27.3 GiB of weights and a context: about 10 GiB/GPU
    const kvGiB = chosen.blueGreen.kvPerGpuBytes / 2 ** 30;
    expect(kvGiB).toBeGreaterThan(8.5);
    expect(kvGiB).toBeLessThan(10.5);
    expect(chosen.blueGreen.kvPerGpuBytes).toBeLessThan(chosen.blueGreen.fullKvPerGpuBytes);
    expect(chosen.why).toMatch(
      /leaves 5\d\.\d GiB free on GPUs 0,1,2,3,4,5,6,7: .* fit beside it at --mem-fraction-static 0\.\d\d \(SGLang applies it to the memory free at its start\).*\(blue\/green sharing GPUs/,
    );
  });

  it("on shared GPUs the new unit's --mem-fraction-static is of the memory free at its start, so SGLang leaves free what it keeps free alone", () => {
    const gpus = box(8, 43);
    const chosen = mode(gpus, 8);
    if (chosen.mode !== "bluegreen") throw new Error("not blue/green");
    const fraction = chosen.blueGreen.memFractionStatic;
    if (fraction === undefined) throw new Error("no fraction for a unit beside another");
    // SGLang (model_runner.py): KV = free after the weights − free at start × (1 − fraction); what stays
    // free on the GPU for both units' activations is free at start × (1 − fraction)
    const total = gpus[0]!.memoryTotalMiB * 2 ** 20;
    const freeAtStart = gpus[0]!.memoryFreeMiB * 2 ** 20 - 2 ** 30;
    const alone = (1 - estimateVram(SEEDS, gpus, 8).staticFraction) * total;
    const leftFree = freeAtStart * (1 - fraction);
    expect(leftFree).toBeGreaterThanOrEqual(alone);
    expect(leftFree).toBeLessThan(alone + 0.01 * freeAtStart);
    // at SGLang's default (0.85) it would take 85 % of what the old unit left, and leave half as much
    expect(freeAtStart * (1 - 0.85)).toBeLessThan(alone * 0.6);
    const weights = estimateVram(SEEDS, gpus, 8).weightsPerGpuBytes;
    expect(chosen.blueGreen.kvPerGpuBytes).toBeCloseTo(freeAtStart * fraction - weights, -3);
    // on idle GPUs the unit runs at its usual fraction
    const spare = mode(box(4, 81.3), 4);
    expect(spare.mode === "bluegreen" && spare.blueGreen.memFractionStatic).toBe(undefined);
  });

  it("never mixes GPUs whose free memory differs by more than SGLang's balance check allows", () => {
    // 4 idle, 4 holding 30 GiB: a tp 8 group would span both, and SGLang stops unbalanced ranks at start
    const gpus = box(4, 30);
    const chosen = mode(gpus, 8);
    expect(chosen.mode).toBe("cold");
    expect(chosen.why).toMatch(
      /8 GPUs could hold the new model beside the model serving now, but no 8 of them have free memory within 10 % of each other: SGLang refuses unbalanced ranks at start/,
    );
    // tp 4 takes the idle four
    expect(mode(gpus, 4)).toMatchObject({ mode: "bluegreen", blueGreen: { devices: [4, 5, 6, 7] } });
  });

  it("idle GPUs come before shared ones, even where the busy ones have room too", () => {
    const gpus = box(6, 20);
    const chosen = chooseClientMode({
      gpus,
      vram: estimateVram(40e9, gpus, 2),
      standby: { port: 30001 },
      sharedBenchmark: "after-flip",
      flipBackSeconds: 300,
    });
    expect(chosen).toMatchObject({ mode: "bluegreen", blueGreen: { gpus: "spare", devices: [6, 7] } });
  });

  it("where it would fit but the host has no standby slot, the swap is cold and the line says what is missing", () => {
    const chosen = mode(box(4, 81.3), 4, {
      missing: "the host's front door has no standby slot (hosts[].frontDoor.standby)",
    });
    expect(chosen.mode).toBe("cold");
    expect(chosen.why).toMatch(
      /are idle: .*, but the host's front door has no standby slot \(hosts\[\]\.frontDoor\.standby\): so the swap is cold$/,
    );
  });

  it("a host where nothing holds the GPUs (nothing served, or it crashed) is cold and says so", () => {
    const gpus = box(0, 0);
    expect(mode(gpus, 8).mode).toBe("cold");
    expect(whyCold(gpus, estimateVram(SEEDS, gpus, 8))).toBe(
      "no GPU holds a model now: nothing is served while the new one loads anyway",
    );
  });
});
