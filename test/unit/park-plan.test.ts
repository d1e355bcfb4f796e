import { describe, expect, it } from "vitest";
import { engineBuildDir } from "../../src/engine/engine-source.ts";
import { makePlan } from "../../src/plan/make-plan.ts";
import type { PlanInput } from "../../src/plan/plan-input.ts";
import { execStartWords } from "../../src/plan/read-host-facts.ts";
import type { SwapPlan } from "../../src/plan/types.ts";
import { renderPlan } from "../../src/reporter/plan-message.ts";
import { GiB, planInput } from "./plan-fixtures.ts";

/*
 * swaps.sleepMode over both engines (issues #15 and #31): units started parkable, and a cold swap that
 * parks the old unit instead of stopping it where its engine can (SGLang's memory saver with a CPU backup,
 * vLLM's sleep mode), host RAM takes its weights, and the new model still fits beside what a parked engine
 * keeps on the GPUs; the plan says how long a rollback would take.
 */

type Kind = "sglang" | "vllm";

const MECHANISM: Record<Kind, { name: RegExp; flags: RegExp[]; env: string[] }> = {
  sglang: {
    name: /SGLang memory saver/,
    flags: [/^ +--enable-memory-saver( \\)?$/m, /^ +--enable-weights-cpu-backup( \\)?$/m],
    env: [],
  },
  vllm: {
    name: /vLLM sleep mode/,
    flags: [/^ +--enable-sleep-mode( \\)?$/m],
    env: ["VLLM_SERVER_DEV_MODE=1"],
  },
};

function input(kind: Kind, extra: Partial<PlanInput> = {}): PlanInput {
  const base = planInput("llama-bf16-small", "h200-1gpu");
  const engine =
    kind === "vllm"
      ? {
          engineKind: "vllm" as const,
          hostConfig: { ...base.hostConfig, venv: "/opt/vllm/.venv" },
          engine: {
            ...base.engine,
            upstream: "https://github.com/vllm-project/vllm.git",
            buildDir: engineBuildDir("/models", base.engine.commit, base.swapId, "vllm"),
          },
        }
      : {};
  return { ...base, ...engine, clients: { mode: "cold", drainSeconds: 90 }, ...extra };
}

/** The unit a swap with (or without) swaps.sleepMode starts. */
const unitOf = (kind: Kind, sleepMode: boolean) => makePlan({ ...input(kind), sleepMode }).unitText;

/** The next swap's plan, cold behind a front door with a standby slot, the old unit holding its GPU. */
function behindFrontDoor(
  kind: Kind,
  oldText: string,
  over: { sleepMode?: boolean; ramGiB?: number; keptGiBFree?: number; facts?: PlanInput["facts"] } = {},
): SwapPlan {
  const base = input(kind);
  const gpus = base.host.gpus.map((g) => ({
    ...g,
    // the old unit holds all but 3 GB: nothing fits beside it, so the swap is cold
    memoryUsedMiB: g.memoryTotalMiB - 3000,
    memoryFreeMiB: 3000,
  }));
  return makePlan({
    ...base,
    ...(over.facts === undefined ? {} : { facts: over.facts }),
    host: {
      ...base.host,
      gpus,
      memoryAvailableBytes: (over.ramGiB ?? 800) * GiB,
      currentUnit: {
        name: `${kind}-old.service`,
        exists: true,
        active: true,
        text: oldText,
        execStart: execStartWords(oldText),
      },
    },
    sleepMode: over.sleepMode ?? true,
    clients: {
      mode: "cold",
      drainSeconds: 30,
      frontDoor: { server: "blue", from: "blue", hold: "hold", holdSeconds: 300 },
    },
    blueGreen: {
      standby: { server: "green", port: 30001 },
      sharedBenchmark: "after-flip",
      flipBackSeconds: 60,
      restartAtFullMemory: false,
    },
  });
}

const flag = (plan: SwapPlan, setting: string) => plan.flags.find((f) => f.setting === setting);

describe.each(["sglang", "vllm"] as const)("swaps.sleepMode, %s", (kind) => {
  const mechanism = MECHANISM[kind];

  it("starts units parkable, each flag with its reason; without sleepMode, none of it", () => {
    const plan = makePlan({ ...input(kind), sleepMode: true });
    const text = plan.unitText;
    for (const f of mechanism.flags) expect(text).toMatch(f);
    for (const e of mechanism.env) expect(text).toContain(`Environment=${e}`);
    const sleepFlags = plan.flags.filter((f) => /sleep-mode|memory-saver|cpu-backup/.test(f.setting));
    expect(sleepFlags).toHaveLength(mechanism.flags.length);
    for (const f of sleepFlags) expect(f.reason).toMatch(/^swaps\.sleepMode: /);
    const plain = unitOf(kind, false);
    for (const f of mechanism.flags) expect(plain).not.toMatch(f);
  });

  it("parks a parkable old unit: the new one on the other slot, its memory beside what the parked one keeps, and the rollback's time said", () => {
    const plan = behindFrontDoor(kind, unitOf(kind, true));
    const park = plan.clients?.park;
    expect(plan.clients?.mode).toBe("cold");
    expect(park).toMatchObject({ will: true, port: 30001 });
    expect(park?.why).toMatch(mechanism.name);
    expect(park?.why).toMatch(
      /comes back in at most about \d+ s \([\d.]+ GiB a GPU at about 10 GB\/s\), not a reload from disk/,
    );
    expect(park?.why).toMatch(/Parked, it keeps [\d.]+ GiB a GPU/);
    expect(park?.wakeSeconds).toBeGreaterThanOrEqual(1);
    // the new unit's memory share leaves what a parked engine keeps on the GPU
    const memory = flag(plan, kind === "vllm" ? "gpu-memory-utilization" : "mem-fraction-static");
    expect(Number(memory?.value)).toBe(park?.memFractionStatic);
    expect(memory?.reason).toMatch(/^beside what the parked model keeps on the same GPUs/);
    expect(park?.kvPerGpuBytes).toBeGreaterThan(0);
    expect(plan.clients?.frontDoor).toMatchObject({ from: "blue", server: "green" });
    expect(flag(plan, "port")?.value).toBe("30001");
    const text = JSON.stringify(
      renderPlan(plan, { swapId: "sw-1", requester: "U0ALICE001", status: "awaiting-approval" }),
    );
    expect(text).toContain("*Old model* parked, not stopped");
  });

  it("stops an old unit not started for it, or whose weights host RAM cannot take, saying why", () => {
    const unparkable = behindFrontDoor(kind, unitOf(kind, false));
    expect(unparkable.clients?.park).toMatchObject({ will: false });
    expect(unparkable.clients?.park?.why).toMatch(/not started for .*(memory saver|sleep mode)/);
    expect(flag(unparkable, "port")?.value).toBe("30000");
    const noRam = behindFrontDoor(kind, unitOf(kind, true), { ramGiB: 16 });
    expect(noRam.clients?.park?.will).toBe(false);
    expect(noRam.clients?.park?.why).toMatch(/host RAM available \(16(\.0)? GiB\) is less than/);
    expect(behindFrontDoor(kind, unitOf(kind, true), { sleepMode: false }).clients?.park).toBeUndefined();
  });

  it("stops it when the new model would have no KV cache beside what a parked engine keeps", () => {
    const base = input(kind);
    const gpu = base.host.gpus[0]!.memoryTotalMiB * 2 ** 20;
    // weights that fill the GPU's share alone but leave nothing once the parked engine's memory is gone
    const fraction = kind === "vllm" ? 0.9 : 0.88;
    const plan = behindFrontDoor(kind, unitOf(kind, true), {
      facts: { ...base.facts, weightBytes: gpu * fraction - 0.5 * GiB },
    });
    expect(plan.clients?.park?.will).toBe(false);
    expect(plan.clients?.park?.why).toMatch(
      /a parked (SGLang|vLLM) keeps [\d.]+ GiB a GPU .* of KV cache beside it/,
    );
  });
});

it("parks by the old unit's engine: an SGLang unit started for it is parked by SGLang's memory saver when vLLM serves the new model", () => {
  const plan = behindFrontDoor("vllm", unitOf("sglang", true));
  expect(plan.clients?.park?.will).toBe(true);
  expect(plan.clients?.park?.why).toMatch(/^SGLang memory saver: /);
});
