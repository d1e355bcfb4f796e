import { readFile } from "node:fs/promises";
import { afterEach, describe, expect, it } from "vitest";
import {
  BENCH_WEIGHT_SCALE,
  type Bench,
  type ChildBot,
  SEED_BOX_FREE_DISK_BYTES,
} from "../../testbench/bench.ts";
import { addSimModel, type SwapDriver, unitOf } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * A worker that lost its swap never touches the host again (issue 27 §2). Worker A is frozen (SIGSTOP)
 * inside the switch, just as `systemctl daemon-reload` returns; worker B takes the swap over, the new
 * model answers NaN and B rolls back: the old unit serves again. Then A wakes up. Before the host checked
 * a fencing token, A went straight on with `systemctl disable --now` of the old unit (the lease is checked
 * when a run saves, not before each command): the record said rolled back, and the host served nothing.
 */
const HOST = "gpu-1";
const LOCK_SECONDS = 5;
let bench: Bench;
let swaps: SwapDriver;

useSwapBench(
  {
    swaps: { lockSeconds: LOCK_SECONDS, stalledCheckSeconds: 1, healthTimeoutSeconds: 60 },
    weightScale: BENCH_WEIGHT_SCALE,
    hosts: [
      {
        name: HOST,
        gpus: "8x-rtx-pro-6000-blackwell",
        serving: { preset: "qwen3-fp8-dense" },
        // longer than A is frozen: A wakes to the answer of the command it sent, not to its own timeout
        commandTimeoutSeconds: 120,
        // the new model (206 GB at the bench's scale) does not fit in this host's page cache: no preload
        // (and its checkpoint) between daemon-reload and the old unit's stop
        hostMemGiB: 128,
        diskFreeBytes: SEED_BOX_FREE_DISK_BYTES,
      },
    ],
  },
  (b, s) => {
    bench = b;
    swaps = s;
  },
);

const frozen: number[] = [];
afterEach(async () => {
  for (const pid of frozen.splice(0)) {
    try {
      process.kill(pid, "SIGCONT");
    } catch {
      // gone already
    }
  }
  await bench.killChildren();
  await bench.host(HOST).sim.release("systemctl");
});

const sim = () => bench.host(HOST).sim;

async function logOf(bot: ChildBot): Promise<string> {
  return await readFile(bot.logPath, "utf8");
}

describe("a worker frozen inside the switch, its swap finished by another", () => {
  it("is refused by the host when it wakes: the old unit B put back keeps serving", async () => {
    const model = addSimModel(bench, "fence-nan");
    await sim().setFault("sglang", { models: { "fence-nan": { mode: "nan" } } });
    const a = await bench.spawnBot();
    const card = await swaps.request(model, HOST);
    const swapId = swaps.swapId(card.ts);
    const planned = await swaps.untilRecord(swapId, (r) => r.previous !== undefined, { what: "the plan" });
    const oldUnit = planned.previous!.unit;
    // A is blocked inside `systemctl daemon-reload` on the host; frozen there, it gets the answer only
    // when it wakes, and goes on from that line
    await sim().hold("systemctl", "daemon-reload");
    await swaps.approve(card.ts);
    await sim().waitHeld("systemctl");
    process.kill(a.pid, "SIGSTOP");
    frozen.push(a.pid);
    await sim().release("systemctl");

    const b = await bench.spawnBot();
    const ended = await swaps.untilRecord(swapId, (r) => r.outcome !== undefined, {
      what: "B to end the swap",
      timeoutMs: 120_000,
    });
    expect(ended.outcome).toBe("rolled_back");
    expect(ended.plan?.clients?.preload?.will).toBe(false);
    expect((await swaps.processedBy(swapId))?.endsWith(`:${b.pid}`)).toBe(true);
    const back = await sim().unitState(oldUnit);
    expect(back.activeState).toBe("active");
    const stopsBefore = await swaps.stopsOf(HOST, oldUnit);

    // A wakes: whatever it tries next on the host is refused there
    process.kill(a.pid, "SIGCONT");
    frozen.splice(frozen.indexOf(a.pid), 1);
    await until(async () => /"code":"FENCE_STALE"/.test(await logOf(a)), {
      what: "A to be refused by the host",
      timeoutMs: 30_000,
    });
    // a moment for anything A might still send (the point of this test is that nothing happens)
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const now = await sim().unitState(oldUnit);
    expect(now.activeState).toBe("active");
    expect(now.mainPid).toBe(back.mainPid);
    expect(await swaps.stopsOf(HOST, oldUnit)).toBe(stopsBefore);
    expect((await sim().unitState(unitOf(ended))).activeState).not.toBe("active");
    const record = await swaps.record(swapId);
    expect(record?.outcome).toBe("rolled_back");
    expect(record?.finishedAt).toBe(ended.finishedAt);
  }, 180_000);
});
