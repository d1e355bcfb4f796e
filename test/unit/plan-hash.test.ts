import { describe, expect, it } from "vitest";
import { planHash } from "../../src/approval/plan-hash.ts";
import type { SwapPlan } from "../../src/plan/types.ts";

/** An approval binds to the plan hash it was given on: what the approver read must be in it. */
const base: Pick<SwapPlan, "model" | "tp" | "unitName" | "unitText" | "clients"> = {
  model: { repo: "Qwen/Qwen3-8B-FP8", revision: "main", sha: "a".repeat(40) } as SwapPlan["model"],
  tp: 4,
  unitName: "sglang-qwen3-8b-fp8-aaaaaaa.service",
  unitText: "[Service]\nExecStart=/opt/venv/bin/python -m sglang.launch_server --port 30001\n",
  clients: {
    mode: "bluegreen",
    drainSeconds: 60,
    frontDoor: { server: "green", from: "blue", hold: "hold", holdSeconds: 300 },
    blueGreen: {
      gpus: "spare",
      devices: [4, 5, 6, 7],
      port: 30001,
      kvPerGpuBytes: 1,
      fullKvPerGpuBytes: 1,
      benchmark: "before-flip",
      flipBackSeconds: 300,
    },
  },
};

describe("the plan hash an approval binds to", () => {
  it("changes when the unit changes, and not for what the approver was not asked about", () => {
    expect(planHash(base)).toBe(planHash({ ...base }));
    expect(planHash({ ...base, unitText: `${base.unitText}# edited\n` })).not.toBe(planHash(base));
    // the drain bound and the flip-back window are settings, not what was approved
    expect(planHash({ ...base, clients: { ...base.clients!, drainSeconds: 90 } })).toBe(planHash(base));
  });

  it("changes with how clients see the swap: cold instead of blue/green, the benchmark's turn, the slots", () => {
    const { blueGreen: _bg, ...coldClients } = base.clients!;
    expect(planHash({ ...base, clients: { ...coldClients, mode: "cold" } })).not.toBe(planHash(base));
    const bg = base.clients!.blueGreen!;
    expect(
      planHash({ ...base, clients: { ...base.clients!, blueGreen: { ...bg, benchmark: "after-flip" } } }),
    ).not.toBe(planHash(base));
    expect(
      planHash({
        ...base,
        clients: {
          ...base.clients!,
          frontDoor: { ...base.clients!.frontDoor!, server: "blue", from: "green" },
        },
      }),
    ).not.toBe(planHash(base));
  });
});
