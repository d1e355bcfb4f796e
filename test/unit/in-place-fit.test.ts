import { describe, expect, it } from "vitest";
import { inPlaceFit } from "../../src/plan/in-place-fit.ts";
import { modelFacts } from "../../src/plan/model-facts.ts";
import type { ModelFacts } from "../../src/plan/types.ts";
import { modelInfoOf } from "./plan-fixtures.ts";

/** Facts as the planner reads them from a simulated Hub preset's config files. */
const facts = (preset: Parameters<typeof modelInfoOf>[0]): ModelFacts => modelFacts(modelInfoOf(preset));

describe("inPlaceFit: whether a new revision can be loaded into the running engine", () => {
  it("fits a revision of the same checkpoint layout", () => {
    expect(inPlaceFit(facts("qwen3-fp8-dense"), facts("qwen3-fp8-dense"))).toEqual({ fits: true });
    expect(inPlaceFit(facts("llama-bf16-small"), facts("llama-bf16-small"))).toEqual({ fits: true });
  });

  it("refuses another architecture, naming what differs", () => {
    const fit = inPlaceFit(facts("llama-bf16-small"), facts("qwen3-fp8-dense"));
    expect(fit).toEqual({
      fits: false,
      why: expect.stringMatching(/^its architecture differs \(.+ served, .+ new\)$/),
    });
  });

  it("refuses the same architecture with other shapes (more layers) or other bytes", () => {
    const served = facts("qwen3-fp8-dense");
    expect(inPlaceFit(served, { ...served, layers: served.layers + 4 })).toEqual({
      fits: false,
      why: `its layer count differs (${served.layers} served, ${served.layers + 4} new)`,
    });
    expect(inPlaceFit(served, { ...served, weightBytes: served.weightBytes + 2 ** 20 })).toMatchObject({
      fits: false,
      why: expect.stringContaining("some tensors differ in shape or dtype"),
    });
  });

  it("refuses the same format quantized another way (block size, scheme)", () => {
    const served = facts("qwen3-fp8-dense");
    const next: ModelFacts = { ...served, quant: { ...served.quant!, blockSize: [64, 64] } };
    expect(inPlaceFit(served, next)).toMatchObject({
      fits: false,
      why: expect.stringMatching(/^its quantization differs/),
    });
  });

  it("never fits the formats an in-place load serves wrongly, though the engine would answer success", () => {
    const fp8 = facts("qwen3-fp8-dense");
    const quant = fp8.quant!;
    const channel: ModelFacts = { ...fp8, quant: { ...quant, scheme: "channel" } };
    expect(inPlaceFit(channel, channel)).toMatchObject({
      fits: false,
      why: expect.stringContaining("sglang#30749"),
    });
    const mxfp4: ModelFacts = { ...fp8, quantization: "mxfp4", quant: { ...quant, format: "mxfp4" } };
    expect(inPlaceFit(mxfp4, mxfp4)).toMatchObject({
      fits: false,
      why: expect.stringContaining("sglang#39472"),
    });
    const nvfp4 = facts("qwen3.5-moe-nvfp4");
    expect(inPlaceFit(nvfp4, nvfp4)).toMatchObject({ fits: false, why: expect.stringContaining("#25190") });
  });
});
