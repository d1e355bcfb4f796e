import { describe, expect, it } from "vitest";
import { planInPlace } from "../../jobs/swap/stages/plan-in-place.ts";
import { makePlan } from "../../src/plan/make-plan.ts";
import type { PlanInput } from "../../src/plan/plan-input.ts";
import { execStartWords } from "../../src/plan/read-host-facts.ts";
import type { SwapPlan } from "../../src/plan/types.ts";
import { renderPlan } from "../../src/reporter/plan-message.ts";
import { planInput } from "./plan-fixtures.ts";

/*
 * Issue #31's same-architecture fast path, as the planner decides it: a new revision of the model serving
 * now is planned to load into the running engine when the checkpoints fit one another, the tokenizer files
 * are the same and the unit would differ only in its model path; anything else is planned the usual way,
 * with the reason in the plan.
 */

const OPTIONS = { status: "awaiting-approval", swapId: "sw-next", requester: "U0ALICE001" } as const;
const OLD_SHA = "1111111111111111111111111111111111111111";
const NEW_SHA = "2222222222222222222222222222222222222222";

/** The model at `sha`, every file that is not a weight carrying a git blob id (as the Hub's tree gives). */
function at(sha: string, oids: Record<string, string> = {}): Pick<PlanInput, "model"> {
  const base = planInput("llama-bf16-small", "h200-1gpu").model;
  return {
    model: {
      ...base,
      sha,
      files: base.files.map((f) =>
        f.path.endsWith(".safetensors") ? f : { ...f, oid: oids[f.path] ?? `oid-of-${f.path}` },
      ),
    },
  };
}

function inputFor(sha: string, swapId: string, extra: Partial<PlanInput> = {}): PlanInput {
  return {
    ...planInput("llama-bf16-small", "h200-1gpu"),
    ...at(sha),
    swapId,
    clients: { mode: "cold", drainSeconds: 90 },
    ...extra,
  };
}

/** The swap that put the old revision there, and the next swap's input with its unit serving. */
function servedThen(next: Partial<PlanInput> = {}, nextSha = NEW_SHA) {
  const served = makePlan(inputFor(OLD_SHA, "sw-served"));
  const base = inputFor(nextSha, "sw-next", next);
  const input: PlanInput = {
    ...base,
    host: {
      ...base.host,
      currentUnit: {
        name: served.unitName,
        exists: true,
        active: true,
        text: served.unitText,
        execStart: execStartWords(served.unitText),
      },
    },
  };
  return { served, input };
}

function ctxOf(served: SwapPlan, inPlace = true) {
  return {
    ledger: {
      serving: async () => ({
        unit: served.unitName,
        repo: served.model.repo,
        sha: served.model.sha,
        since: "2026-12-01T00:00:00.000Z",
        swapId: "sw-served",
        engine: "sglang" as const,
      }),
      lastBenchmark: async () => undefined,
      planOf: async (id: string) => (id === "sw-served" ? served : undefined),
    },
    settings: { inPlace } as never,
  };
}

async function plan(next: Partial<PlanInput> = {}, inPlace = true, nextSha = NEW_SHA) {
  const { served, input } = servedThen(next, nextSha);
  return { served, plan: await planInPlace(ctxOf(served, inPlace), input, makePlan(input)) };
}

describe("planInPlace: a new revision of the served model", () => {
  it("loads into the running unit: its name kept, only the model path and its words changed", async () => {
    const { served, plan: p } = await plan();
    expect(p.clients?.inPlace).toMatchObject({
      will: true,
      mechanism: "update_weights_from_disk",
      fromModelDir: served.modelDir,
      fromSha: OLD_SHA,
    });
    expect(p.clients?.park).toBeUndefined();
    expect(p.clients?.blueGreen).toBeUndefined();
    expect(p.unitName).toBe(served.unitName);
    expect(p.tp).toBe(served.tp);
    expect(p.tpReason).toMatch(/the running engine's/);
    // the flags are the served unit's but for --model-path
    expect(p.unitText).toContain(`--model-path ${p.modelDir}`);
    expect(p.unitText).not.toContain(served.modelDir.concat(" "));
    const changed = p.unitDiff.split("\n").filter((l) => /^[-+][^-+]/.test(l));
    expect(changed.every((l) => /^[-+](#|Description=|ExecStart=| +--model-path)/.test(l))).toBe(true);
    expect(p.unitText).toMatch(/^# Weights loaded in place \(update_weights_from_disk\) by swap sw-next/m);
    // the process keeps the compile caches it was started with
    const caches = (t: string) => t.split("\n").filter((l) => l.startsWith("Environment=TRITON_CACHE_DIR="));
    expect(caches(p.unitText)).toEqual(caches(served.unitText));
    // seconds, not a load: no start, graphs or JIT
    expect(p.expectedDowntimeSeconds).toBeLessThan(10);
    const text = renderPlan(p, OPTIONS).text ?? "";
    const blocks = JSON.stringify(renderPlan(p, OPTIONS).blocks);
    expect(text + blocks).toMatch(/\*In place\* yes: a new revision of the model serving now/);
    expect(blocks).toMatch(/goes on running and loads the new weights in place/);
  });

  it("is not asked of another repository, nor with swaps.inPlace off", async () => {
    const other = await plan({ model: { ...at(NEW_SHA).model, repo: "someone/else" } });
    expect(other.plan.clients?.inPlace).toBeUndefined();
    expect(other.plan.unitName).not.toBe(other.served.unitName);
    const off = await plan({}, false);
    expect(off.plan.clients?.inPlace).toBeUndefined();
  });

  it("refuses a revision that changes the tokenizer: the running engine would keep the old one", async () => {
    const { plan: p } = await plan(at(NEW_SHA, { "tokenizer_config.json": "a-new-blob" }));
    expect(p.clients?.inPlace).toEqual({
      will: false,
      why: expect.stringMatching(/^not loaded in place: the new revision changes tokenizer_config\.json/),
    });
    expect(p.unitName).toMatch(/-2222222\.service$/);
    const blocks = JSON.stringify(renderPlan(p, OPTIONS).blocks);
    expect(blocks).toMatch(
      /\*In place\* no: not loaded in place: the new revision changes tokenizer_config.json/,
    );
  });

  it("refuses a revision whose checkpoint differs in shape, naming what differs", async () => {
    const { input } = servedThen();
    const { plan: p } = await plan({ facts: { ...input.facts, layers: input.facts.layers + 2 } });
    expect(p.clients?.inPlace?.will).toBe(false);
    expect(p.clients?.inPlace?.why).toMatch(/its layer count differs/);
  });

  it("refuses when the new plan's flags differ from the running unit's (they cannot change in place)", async () => {
    const { plan: p } = await plan({
      flagLayers: [
        { from: "swap (--set)", settings: [{ setting: "context-length", value: "8192", reason: "asked" }] },
      ],
    });
    expect(p.clients?.inPlace).toEqual({
      will: false,
      why: expect.stringMatching(/^not loaded in place: its unit would change beyond the model path/),
    });
    expect(p.unitText).toContain("--context-length 8192");
  });

  it("is not asked when the same commit is swapped in again", async () => {
    const { plan: p } = await plan({}, true, OLD_SHA);
    expect(p.clients?.inPlace).toBeUndefined();
  });
});
