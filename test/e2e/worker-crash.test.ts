import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Bench, CHANNEL, startBench, USERS } from "../../testbench/bench.ts";
import { makeModel } from "../../testbench/hub/index.ts";

/**
 * The worker is a real `modelswap start` process, SIGKILLed in the middle of a download: the detached
 * `hf` keeps going on the host, a new process re-attaches to it instead of starting another, and the swap
 * finishes without fetching a byte twice.
 */
const QWEN = "nvidia/Qwen3.5-397B-A17B-NVFP4";
let bench: Bench;

beforeAll(async () => {
  bench = await startBench({
    swaps: { pollSeconds: 0.3, cardUpdateSeconds: 1 },
    hosts: [{ name: "gpu-1", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } }],
  });
  bench.hub.addModel(makeModel("qwen3.5-moe-nvfp4"));
}, 120_000);

afterAll(async () => {
  await bench?.stop();
});

describe("a worker killed mid-download", () => {
  it("is replaced by one that re-attaches to the running download and finishes the swap", async () => {
    const host = bench.host("gpu-1");
    const model = bench.hub.getModel(QWEN)!;
    const weights = model.files.filter((f) => f.path.endsWith(".safetensors"));
    const weightBytes = weights.reduce((n, f) => n + f.size, 0);
    bench.hub.setThrottle(500_000); // each shard takes a few seconds
    const first = await bench.spawnBot();
    const seen = bench.hub.requests().length;
    await bench.slack.command(USERS.alice, `swap ${QWEN}`, { channel: CHANNEL });
    const card = await bench.slack.waitFor(
      () => bench.slack.messages(CHANNEL).find((m) => m.text.includes("→ gpu-1")),
      {
        what: "the card",
        timeoutMs: 30_000,
      },
    );
    await bench.slack.waitFor(
      () =>
        /Download — [1-9]\d* %/.test(JSON.stringify(bench.slack.message(CHANNEL, card.ts)?.blocks))
          ? true
          : undefined,
      { what: "the download under way", timeoutMs: 30_000 },
    );
    await first.kill("SIGKILL");

    // the download is detached: it keeps running on the host with nobody watching
    const alive = await host.sim.exec(
      "ps -eo stat=,args= | grep -E 'hf(\\.mjs)? download' | grep -v grep | grep -v '^Z' | wc -l",
    );
    expect(Number(alive.stdout.trim())).toBeGreaterThan(0);

    await bench.spawnBot();
    const plan = await bench.slack.waitFor(
      () =>
        bench.slack.thread(CHANNEL, card.ts).find((m) => JSON.stringify(m.blocks).includes("swap_approve")),
      { what: "the plan", timeoutMs: 30_000 },
    );
    await bench.slack.react(USERS.bob, CHANNEL, plan.ts, "white_check_mark");
    await bench.slack.waitFor(
      () => (/Swapped/.test(bench.slack.message(CHANNEL, card.ts)?.text ?? "") ? true : undefined),
      { what: "the swap to finish under the new worker", timeoutMs: 100_000 },
    );
    bench.hub.setThrottle(null);

    const downloads = (await host.sim.calls()).filter((c) => c.cmd === "hf" && c.argv[0] === "download");
    expect(downloads).toHaveLength(1);
    const served = bench.hub
      .requests()
      .slice(seen)
      .filter((r) => r.method === "GET" && r.kind === "resolve" && r.path.endsWith(".safetensors"))
      .reduce((n, r) => n + r.bytesSent, 0);
    expect(served).toBe(weightBytes);
    expect(bench.slack.messages(CHANNEL).filter((m) => m.text.includes("→ gpu-1"))).toHaveLength(1);
  }, 200_000);
});
