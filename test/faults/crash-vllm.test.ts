import { describe, expect, it } from "vitest";
import { BENCH_WEIGHT_SCALE, type Bench, SEED_BOX_FREE_DISK_BYTES } from "../../testbench/bench.ts";
import { makeModel } from "../../testbench/hub/index.ts";
import { addSimModel, type SwapDriver, unitOf } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * The fault suite's crashes, with vLLM (issue #15): a real `modelswap start` process SIGKILLed inside a
 * vLLM swap — while its engine build (pip --target on the host) runs, while the new vLLM model loads,
 * during vLLM's sanity prompts, and just after the old vLLM unit was parked (sleep mode) — then a new
 * process is started. Nothing runs twice: one build, one start of the new unit; a parked unit is woken,
 * never restarted.
 */
const HOST = "gpu-v";
const PARK = "gpu-park";
let bench: Bench;
let swaps: SwapDriver;

useSwapBench(
  {
    swaps: { lockSeconds: 5, stalledCheckSeconds: 1, healthTimeoutSeconds: 60, sleepMode: true },
    weightScale: BENCH_WEIGHT_SCALE,
    hosts: [
      {
        name: HOST,
        gpus: "8x-rtx-pro-6000-blackwell",
        serving: { preset: "qwen3-fp8-dense" },
        vllm: "only",
        diskFreeBytes: SEED_BOX_FREE_DISK_BYTES,
      },
      {
        name: PARK,
        gpus: "8x-rtx-pro-6000-blackwell",
        serving: { preset: "qwen3-fp8-dense" },
        vllm: "only",
        diskFreeBytes: SEED_BOX_FREE_DISK_BYTES,
        frontDoor: { holdSeconds: 60, standby: true },
      },
    ],
  },
  (b, s) => {
    bench = b;
    swaps = s;
  },
);

const sim = (host = HOST) => bench.host(host).sim;

/** Starts a swap under a fresh bot and approves its plan. */
async function approvedSwap(model: string, host = HOST): Promise<{ cardTs: string; swapId: string }> {
  await bench.spawnBot();
  const card = await swaps.request(`${model} --engine-ref v0.18.0`, host);
  const swapId = swaps.swapId(card.ts);
  await swaps.plan(card.ts);
  await swaps.approve(card.ts);
  return { cardTs: card.ts, swapId };
}

/** After the crash and restart: swapped once, the new vLLM unit started once, its build run once. */
async function expectSwappedOnce({ cardTs, swapId }: { cardTs: string; swapId: string }): Promise<void> {
  await swaps.outcome(cardTs, /Swapped/, 120_000);
  const record = await swaps.record(swapId);
  expect(record?.outcome).toBe("succeeded");
  expect(record?.plan?.engineKind).toBe("vllm");
  expect(await swaps.startsOf(HOST, unitOf(record))).toBe(1);
  const builds = (await sim().calls()).filter(
    (c) => c.cmd === "pip" && c.argv.includes("--target") && c.argv.some((a) => a.includes(swapId)),
  );
  // one build, or none when the plan reused the serving unit's build of the same commit (issue 28)
  expect(builds).toHaveLength(record?.plan?.engine?.reused === true ? 0 : 1);
  expect(swaps.cardsOf(swapId)).toHaveLength(1);
  await bench.killChildren();
}

describe("a worker killed inside a vLLM swap, then restarted", () => {
  it("while the engine build runs on the host: it is not started again, and the swap goes on", async () => {
    await sim().hold("pip", "--target");
    const swap = await approvedSwap(addSimModel(bench, "v-crash-in-build"));
    await sim().waitHeld("pip");
    await bench.killChildren();
    await sim().release("pip"); // the detached build goes on with nobody watching
    await bench.spawnBot();
    await expectSwappedOnce(swap);
  }, 180_000);

  it("while the new vLLM model loads: the health wait resumes, the unit is not restarted", async () => {
    await sim().setFault("vllm", { models: { "v-crash-in-health": { loadSeconds: 6 } } });
    const swap = await approvedSwap(addSimModel(bench, "v-crash-in-health"));
    await swaps.untilRecord(swap.swapId, (r) => r.step === "health", { what: "the health wait" });
    await bench.killChildren();
    await bench.spawnBot();
    await expectSwappedOnce(swap);
    await sim().setFault("vllm", null);
  }, 180_000);

  it("during vLLM's sanity prompts: they are asked again by the new process", async () => {
    // the sanity prompts go on curl's standard input (the health probe's 1-token body is an argument)
    await sim().hold("curl", "--data-binary @-");
    const swap = await approvedSwap(addSimModel(bench, "v-crash-in-sanity"));
    await sim().waitHeld("curl");
    expect((await swaps.record(swap.swapId))?.step).toBe("sanity");
    await bench.killChildren();
    await sim().release("curl");
    await bench.spawnBot();
    await expectSwappedOnce(swap);
    expect((await swaps.record(swap.swapId))?.sanity?.ok).toBe(true);
  }, 180_000);

  it("just after parking the old vLLM unit: the new one fails, and the parked one is woken, not restarted", async () => {
    const ids = ["nvidia/Qwen3.5-397B-A17B-NVFP4", "nvidia/Qwen3.5-397B-A17B-NVFP4-crash"];
    for (const id of ids)
      bench.hub.addModel(makeModel("qwen3.5-moe-nvfp4", { id, gated: false, scale: BENCH_WEIGHT_SCALE }));
    // a parkable vLLM unit first (swaps.sleepMode), from the host's SGLang one
    const first = await approvedSwap(ids[0]!, PARK);
    await swaps.outcome(first.cardTs, /Swapped/, 120_000);
    const parked = unitOf(await swaps.record(first.swapId));
    await bench.killChildren();
    // the second swap's new model answers NaN; the worker dies as it starts the new unit, after the park
    await sim(PARK).setFault("vllm", { models: { "NVFP4-crash": { mode: "nan" } } });
    await sim(PARK).hold("systemctl", " enable --now");
    const second = await approvedSwap(ids[1]!, PARK);
    await sim(PARK).waitHeld("systemctl");
    const atKill = await swaps.record(second.swapId);
    expect(atKill?.switch?.parked?.at).toBeDefined();
    await bench.killChildren();
    await sim(PARK).release("systemctl");
    await bench.spawnBot();
    await swaps.outcome(second.cardTs, /Rolled back/, 120_000);
    const record = await swaps.record(second.swapId);
    expect(record?.switch?.parked?.wokenAt).toBeDefined();
    expect(await swaps.startsOf(PARK, parked)).toBe(1);
    expect(await sim(PARK).unitState(parked)).toMatchObject({ activeState: "active" });
    await until(
      async () =>
        (await fetch(`http://127.0.0.1:${bench.host(PARK).servingPort}/is_sleeping`).then((r) =>
          r.json(),
        )) as {
          is_sleeping: boolean;
        },
      { what: "the parked unit to answer" },
    ).then((answer) => expect(answer).toEqual({ is_sleeping: false }));
    await bench.killChildren();
  }, 240_000);
});
