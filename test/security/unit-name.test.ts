import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import { makeModel } from "../../testbench/hub/index.ts";
import type { SwapDriver } from "../../testbench/swap-driver.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * A switch changes what is served, or it fails (issue #12, item 3). A model of the same name from
 * another org, or a new revision of the served repo, used to get the serving unit's own name: the switch
 * overwrote the running unit's file, `enable --now` started nothing, and the thread said "now serves …"
 * while the old process (same MainPID) served the old model. Now a new unit never takes the serving unit's
 * name, the old unit file is never overwritten, and "now serves" is said only once a new process is
 * proven to serve the new weights.
 */
const FIRST = "sim-org/open-llama-1B";
const TWIN = "other-org/open-llama-1B";
const NEXT_SHA = "7ce29ad0d1b2c3d4e5f60718293a4b5c6d7e8f90";

let bench: Bench;
let swaps: SwapDriver;
useSwapBench(
  {
    hosts: [{ name: "gpu-1", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } }],
    // the new revision below is a cold swap here: loaded in place (swaps.inPlace, on by default), the
    // running unit's file is rewritten on purpose, once the same process is proven to serve the new
    // weights (test/e2e/in-place.test.ts)
    swaps: { inPlace: false },
    startBot: true,
  },
  (b, s) => {
    bench = b;
    swaps = s;
  },
);

/** A swap to `model`, approved, to its end; the record then. */
async function swapTo(model: string) {
  const card = await swaps.request(model, "gpu-1");
  const id = swaps.swapId(card.ts);
  await swaps.approve(card.ts);
  await swaps.outcome(card.ts, /Swapped|Rolled back|Failed/, 90_000);
  return (await swaps.record(id))!;
}

/** What the server on the host's port says it serves (SGLang's /v1/models). */
async function served(): Promise<string[]> {
  const res = await fetch(`http://127.0.0.1:${bench.host("gpu-1").servingPort}/v1/models`);
  return ((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id);
}

describe("a swap to a model the serving unit's name would fit", () => {
  it("gets a unit of its own, leaves the serving unit's file alone, and serves the new model", async () => {
    bench.hub.addModel(makeModel("llama-bf16-small", { id: FIRST, gated: false }));
    bench.hub.addModel(
      makeModel("llama-bf16-small", {
        id: TWIN,
        gated: false,
        revisions: { main: "c".repeat(40), next: NEXT_SHA },
      }),
    );
    const first = await swapTo(FIRST);
    expect(first.outcome, first.reason).toBe("succeeded");
    const { sim } = bench.host("gpu-1");
    const firstUnit = first.plan!.unitName;
    const firstFile = await readFile(first.plan!.unitPath, "utf8");
    const firstPid = (await sim.unitState(firstUnit)).mainPid;
    expect(firstPid).toBeGreaterThan(0);

    // the same model name from another org
    const twin = await swapTo(TWIN);
    expect(twin.plan!.unitName).not.toBe(firstUnit);
    expect(twin.outcome, twin.reason).toBe("succeeded");
    expect(await readFile(first.plan!.unitPath, "utf8")).toBe(firstFile);
    expect(await sim.unitState(firstUnit)).toMatchObject({
      activeState: "inactive",
      unitFileState: "disabled",
    });
    const twinState = await sim.unitState(twin.plan!.unitName);
    expect(twinState).toMatchObject({ activeState: "active", unitFileState: "enabled" });
    expect(twinState.mainPid).not.toBe(firstPid);
    expect(await served()).toEqual([TWIN]);

    // a new revision of the repo that serves now
    const next = await swapTo(`${TWIN}@next`);
    expect(next.plan!.unitName).not.toBe(twin.plan!.unitName);
    expect(next.outcome, next.reason).toBe("succeeded");
    expect((await sim.unitState(next.plan!.unitName)).mainPid).not.toBe(twinState.mainPid);
    expect(next.plan!.model.sha).toBe(NEXT_SHA);
  }, 300_000);
});
