import { describe, expect, it } from "vitest";
import { preloadPlan } from "../../src/plan/preload.ts";
import type { HostFacts } from "../../src/plan/types.ts";
import { gpusOf } from "./plan-fixtures.ts";

/** The seeds' box: 1 TiB of RAM, the 223 GB NVFP4 model. */
function host(extra: Partial<HostFacts>): HostFacts {
  return {
    host: "gpu-1",
    gpus: gpusOf("8x-rtx-pro-6000-blackwell"),
    freeDiskBytes: 7e12,
    bytesOnDisk: 0,
    memoryBytes: 2 ** 40,
    venvOk: true,
    currentUnit: { name: "sglang-qwen.service", exists: true, active: true, text: "", execStart: [] },
    ...extra,
  };
}

describe("the page-cache preload in the plan", () => {
  it("reads the weights into the page cache when vmtouch is there and they fit well inside the RAM available", () => {
    expect(preloadPlan(host({ vmtouch: true, memoryAvailableBytes: 900e9 }), 223e9)).toEqual({
      will: true,
      why: "207.7 GiB of weights fit in the 838.2 GiB of RAM available: they are read into the page cache before the old unit stops, so the load reads memory, not disk",
    });
  });

  it("does not when they would not stay in the page cache (more than 80 % of the RAM available)", () => {
    const plan = preloadPlan(host({ vmtouch: true, memoryAvailableBytes: 256e9 }), 223e9);
    expect(plan.will).toBe(false);
    expect(plan.why).toBe(
      "207.7 GiB of weights against 238.4 GiB of RAM available: they would not stay in the page cache, so the new unit reads them from disk",
    );
  });

  it("does not without vmtouch, and says how to install it", () => {
    const plan = preloadPlan(host({ vmtouch: false, memoryAvailableBytes: 900e9 }), 223e9);
    expect(plan).toMatchObject({ will: false, why: expect.stringContaining("apt-get install vmtouch") });
  });

  it("does not when the RAM available could not be read (a plan from before it was read)", () => {
    expect(preloadPlan(host({ vmtouch: true }), 223e9).will).toBe(false);
  });
});
