import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Bench, CHANNEL, startBench, USERS } from "../../testbench/bench.ts";
import { makeModel } from "../../testbench/hub/index.ts";

/** Hosts are independent: two swaps on two hosts run side by side, each with its own lock, card and outcome. */
const QWEN = "nvidia/Qwen3.5-397B-A17B-NVFP4";
let bench: Bench;

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
}, 120_000);

afterAll(async () => {
  await bench?.stop();
});

describe("two hosts", () => {
  it("swap at the same time, under Slack's real rate limits", async () => {
    const cards = await Promise.all(
      ["left", "right"].map(async (host) => {
        const ack = await bench.slack.command(USERS.alice, `swap ${QWEN} --host ${host}`, {
          channel: CHANNEL,
        });
        expect(ack.ackResponse?.text).toContain("Swap queued");
        return await bench.slack.waitFor(
          () => bench.slack.messages(CHANNEL).find((m) => m.text.includes(`→ ${host}`)),
          { what: `the card for ${host}`, timeoutMs: 20_000 },
        );
      }),
    );
    const plans = await Promise.all(
      cards.map((card) =>
        bench.slack.waitFor(
          () =>
            bench.slack
              .thread(CHANNEL, card.ts)
              .find((m) => JSON.stringify(m.blocks).includes("swap_approve")),
          { what: "a plan", timeoutMs: 30_000 },
        ),
      ),
    );
    // both wait for approval at once: each host is locked by its own swap
    const busy = await bench.slack.command(USERS.alice, `swap ${QWEN} --host right`, { channel: CHANNEL });
    expect(busy.ackResponse?.text).toContain("right is busy");
    await Promise.all(
      plans.map((plan) => bench.slack.react(USERS.bob, CHANNEL, plan.ts, "white_check_mark")),
    );
    const outcomes = await Promise.all(
      cards.map((card) =>
        bench.slack.waitFor(
          () => {
            const text = bench.slack.message(CHANNEL, card.ts)?.text ?? "";
            return /Swapped|Rolled back|Failed/.test(text) ? text : undefined;
          },
          { what: "both outcomes", timeoutMs: 90_000 },
        ),
      ),
    );
    expect(outcomes[0]).toMatch(/Swapped: .* → left/);
    expect(outcomes[1]).toMatch(/Swapped: .* → right/);
    // the B200 plan needs no SM120 backend overrides; the RTX PRO 6000 one does
    expect(JSON.stringify(plans[0]!.blocks)).toContain("flashinfer_cudnn");
    expect(JSON.stringify(plans[1]!.blocks)).not.toContain("flashinfer_cudnn");
    expect(bench.slack.rateLimitedCount()).toBe(0);
    // left's configured engine patch was applied on top of the fetched engine; right has none
    const patched = await bench
      .host("left")
      .sim.exec(`cat ${bench.host("left").sim.engineSourceDir}/README.md`);
    expect(patched.stdout).toContain("SM120 support, local patch");
    const plain = await bench
      .host("right")
      .sim.exec(`cat ${bench.host("right").sim.engineSourceDir}/README.md`);
    expect(plain.stdout).not.toContain("SM120 support");
    expect(
      bench.slack
        .thread(CHANNEL, cards[0]!.ts)
        .map((m) => m.text)
        .join("\n"),
    ).toContain("Engine built");
  }, 150_000);
});
