import { describe, expect, it } from "vitest";
import { ENGINE_KINDS } from "../../src/engine/engine-kind.ts";
import { engineFor } from "../../src/engine/engines.ts";
import { catalogueRecipes, shippedCatalogue } from "../../src/plan/catalogue.ts";
import { catalogueSchema, recipeSchema } from "../../src/plan/catalogue-schema.ts";
import { ccIn, compatibleRow } from "../../src/plan/compatibility.ts";
import { parseHelpOptions } from "../../src/plan/flag-spellings.ts";
import { ENGINE_HELP } from "../support/engine-help.ts";

/* The recipe catalogue is data (issue 28 §1): valid, sourced, and every flag one the engines accept. */

describe("the shipped catalogue (src/plan/catalogue.yaml)", () => {
  const catalogue = shippedCatalogue();

  it("is valid against its schema, every flag, variable and note with its reason and source", () => {
    expect(catalogueSchema.safeParse(catalogue).success).toBe(true);
    expect(catalogue.recipes.length).toBeGreaterThanOrEqual(10);
    for (const r of catalogue.recipes) {
      for (const f of [...r.flags, ...r.env]) {
        expect(f.reason.length, `${r.id} ${JSON.stringify(f)}`).toBeGreaterThan(10);
        expect(f.source.length, `${r.id} ${JSON.stringify(f)}`).toBeGreaterThan(10);
      }
      for (const n of r.notes) expect(n.source, r.id).toBeDefined();
    }
    for (const row of catalogue.compatibility) expect(row.source).toMatch(/https:\/\//);
  });

  it("every recipe flag is one each engine's build lists in its --help, with a value its choices take", () => {
    for (const kind of ENGINE_KINDS) {
      const options = parseHelpOptions(ENGINE_HELP[kind]);
      const engine = engineFor(kind);
      for (const recipe of catalogue.recipes) {
        if (recipe.match.engines !== undefined && !recipe.match.engines.includes(kind)) continue;
        for (const flag of recipe.flags) {
          if (flag.engines !== undefined && !flag.engines.includes(kind)) continue;
          const value =
            flag.value === true ? undefined : typeof flag.value === "string" ? flag.value : flag.value[kind];
          if (typeof flag.value === "object" && value === undefined) continue;
          const spelling = engine.spellingsOf(flag.setting)[0]!.flag;
          expect(options.has(spelling), `${kind}: ${recipe.id} sets ${spelling}`).toBe(true);
          const choices = options.get(spelling);
          if (choices !== undefined && value !== undefined)
            expect(choices, `${kind}: ${recipe.id} ${spelling} ${value}`).toContain(value);
        }
      }
    }
  });

  it("no recipe sets trust-remote-code, host, port, model-path or tp-size: the schema refuses them", () => {
    for (const setting of ["trust-remote-code", "host", "port", "model-path", "tp-size", "grpc-port"]) {
      const parsed = recipeSchema.safeParse({
        id: "x",
        title: "a recipe",
        match: {},
        flags: [{ setting, reason: "because", source: "hearsay" }],
      });
      expect(parsed.success, setting).toBe(false);
    }
    // the operator's own come after the shipped ones
    const own = recipeSchema.parse({ id: "mine", title: "mine", match: {}, flags: [] });
    expect(catalogueRecipes([own]).at(-1)?.id).toBe("mine");
  });
});

describe("the compatibility table", () => {
  const table = shippedCatalogue().compatibility;
  const cc = (major: number, minor: number) => ({ major, minor });
  const runs = (
    format: string,
    method: string,
    c: { major: number; minor: number },
    engine: "sglang" | "vllm",
  ) =>
    compatibleRow(
      {
        quantization: format as never,
        quant: { format: format as never, method, description: "", source: "" },
      },
      c,
      engine,
      table,
    )?.how;

  it("reads ranges: 12.x, >=8.9, 8.0-8.8", () => {
    expect(ccIn("12.x", cc(12, 0))).toBe(true);
    expect(ccIn("12.x", cc(12, 1))).toBe(true);
    expect(ccIn("12.x", cc(10, 0))).toBe(false);
    expect(ccIn(">=8.9", cc(9, 0))).toBe(true);
    expect(ccIn(">=8.9", cc(8, 6))).toBe(false);
    expect(ccIn("8.0-8.8", cc(8, 6))).toBe(true);
    expect(ccIn("8.0-9.x", cc(9, 0))).toBe(true);
    expect(ccIn("8.0-9.x", cc(10, 0))).toBe(false);
  });

  it("NVFP4: SGLang on sm_100 and sm_120 only; vLLM also on Hopper and Ampere, weight-only through Marlin", () => {
    expect(runs("nvfp4", "modelopt", cc(9, 0), "sglang")).toBeUndefined();
    expect(runs("nvfp4", "modelopt", cc(10, 0), "sglang")).toBeDefined();
    expect(runs("nvfp4", "modelopt", cc(12, 0), "sglang")).toBeDefined();
    expect(runs("nvfp4", "modelopt", cc(9, 0), "vllm")).toMatch(/Marlin/);
    expect(runs("nvfp4", "modelopt", cc(7, 5), "vllm")).toBeUndefined();
  });

  it("MXFP4 on Ampere and newer with both; FP8 on sm_80 only as weight-only Marlin; compressed-tensors W4A16 needs sm_80", () => {
    expect(runs("mxfp4", "mxfp4", cc(9, 0), "vllm")).toMatch(/Triton/);
    expect(runs("mxfp4", "mxfp4", cc(12, 0), "sglang")).toBeDefined();
    expect(runs("fp8", "fp8", cc(8, 0), "vllm")).toMatch(/weight-only FP8 \(W8A16\) through Marlin/);
    expect(runs("fp8", "fp8", cc(9, 0), "vllm")).toMatch(/tensor cores/);
    expect(runs("int4", "compressed-tensors", cc(7, 5), "vllm")).toBeUndefined();
    expect(runs("int4", "awq", cc(7, 5), "vllm")).toBeDefined();
    expect(runs("bf16", "none", cc(7, 5), "sglang")).toBeUndefined();
  });
});
