import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Bench, CHANNEL, startBench, USERS } from "../../testbench/bench.ts";
import { makeModel } from "../../testbench/hub/index.ts";
import { SwapDriver } from "../../testbench/swap-driver.ts";

/** Hosts are independent: two swaps on two hosts run side by side, each with its own lock, card and outcome. */
const QWEN = "nvidia/Qwen3.5-397B-A17B-NVFP4";
let bench: Bench;
let swaps: SwapDriver;

beforeAll(async () => {
  bench = await startBench({
    swaps: { pollSeconds: 0.3, cardUpdateSeconds: 1 },
    hosts: [
      {
        name: "left",
        gpus: "8x-rtx-pro-6000-blackwell",
        serving: { preset: "qwen3-fp8-dense" },
        enginePatch: true,
      },
      { name: "right", gpus: "8x-b200", serving: { preset: "qwen3-fp8-dense" } },
    ],
  });
  bench.hub.addModel(makeModel("qwen3.5-moe-nvfp4"));
  await bench.startBot();
  swaps = new SwapDriver(bench);
}, 120_000);

afterAll(async () => {
  await swaps?.close();
  await bench?.stop();
});

describe("two hosts", () => {
  it("swap at the same time, under Slack's real rate limits", async () => {
    const cards = await Promise.all(["left", "right"].map((host) => swaps.request(QWEN, host)));
    const plans = await Promise.all(cards.map((card) => swaps.plan(card.ts, 30_000)));
    // both wait for approval at once: each host is locked by its own swap
    const busy = await bench.slack.command(USERS.alice, `swap ${QWEN} --host right`, { channel: CHANNEL });
    expect(busy.ackResponse?.text).toContain("right is busy");
    await Promise.all(cards.map((card) => swaps.approve(card.ts)));
    const outcomes = await Promise.all(
      cards.map(async (card) => (await swaps.outcome(card.ts, /Swapped|Rolled back|Failed/, 90_000)).text),
    );
    expect(outcomes[0]).toMatch(/Swapped: .* → left/);
    expect(outcomes[1]).toMatch(/Swapped: .* → right/);
    // the B200 plan needs no SM120 backend overrides; the RTX PRO 6000 one does
    expect(JSON.stringify(plans[0]!.blocks)).toContain("flashinfer_cudnn");
    expect(JSON.stringify(plans[1]!.blocks)).not.toContain("flashinfer_cudnn");
    expect(bench.slack.rateLimitedCount()).toBe(0);
    // left's configured engine patch was applied to its build, on top of the fetched engine; right has none
    const buildOf = async (card: (typeof cards)[number]) =>
      (await swaps.record(swaps.swapId(card.ts)))!.plan!.engine!.buildDir;
    const patched = await bench.host("left").sim.exec(`cat ${await buildOf(cards[0]!)}/README.md`);
    expect(patched.stdout).toContain("SM120 support, local patch");
    const plain = await bench.host("right").sim.exec(`cat ${await buildOf(cards[1]!)}/README.md`);
    expect(plain.stdout).toContain("SGLang");
    expect(plain.stdout).not.toContain("SM120 support");
    expect(
      bench.slack
        .thread(CHANNEL, cards[0]!.ts)
        .map((m) => m.text)
        .join("\n"),
    ).toContain("Engine built");
  }, 150_000);
});
