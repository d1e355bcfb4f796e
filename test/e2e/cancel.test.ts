import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Bench, CHANNEL, QUICK_BENCH, startBench, USERS } from "../../testbench/bench.ts";
import { makeModel } from "../../testbench/hub/index.ts";
import type { SlackMessage } from "../../testbench/slack/index.ts";
import { SwapDriver } from "../../testbench/swap-driver.ts";

/** `/llm cancel` on the bench: before the switch (tasks stopped, files kept) and after it (rolled back). */
const QWEN = "nvidia/Qwen3.5-397B-A17B-NVFP4";
let bench: Bench;
let swaps: SwapDriver;

beforeAll(async () => {
  bench = await startBench({
    ...QUICK_BENCH,
    swaps: { pollSeconds: 0.2, cardUpdateSeconds: 1 },
    hosts: [
      { name: "early", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } },
      { name: "late", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } },
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

async function swapOn(host: string): Promise<{ card: SlackMessage; id: string }> {
  const card = await swaps.request(QWEN, host);
  return { card, id: swaps.swapId(card.ts) };
}

describe("/llm cancel", () => {
  it("before the switch: stops the download and build, keeps the files, and says where", async () => {
    const host = bench.host("early");
    // a slow download and build, so there is something running to stop
    bench.hub.setThrottle(200_000);
    await host.sim.setFault("import", { seconds: 30 });
    const { card, id } = await swapOn("early");
    await bench.slack.waitFor(
      () => /Download — \d+ %/.test(JSON.stringify(bench.slack.message(CHANNEL, card.ts)?.blocks)),
      {
        what: "the download to be under way",
        timeoutMs: 20_000,
      },
    );
    const ack = await bench.slack.command(USERS.alice, `cancel ${id}`, { channel: CHANNEL });
    expect(ack.ackResponse?.text).toContain(`Cancelling swap \`${id}\``);
    await swaps.outcome(card.ts, /Cancelled/, 20_000);
    bench.hub.setThrottle(null);
    const blocks = JSON.stringify(bench.slack.message(CHANNEL, card.ts)?.blocks);
    expect(blocks).toContain("cancelled by");
    expect(blocks).toMatch(/downloaded files are kept in \S+--43da92d546ab \(\d/);
    // nothing of the swap still runs on the host, and the old service was never touched
    const running = await host.sim.exec(
      `ps -eo stat=,args= | grep -E 'hf download|import sglang' | grep -v grep | grep -v '^Z' || true`,
    );
    expect(running.stdout.trim()).toBe("");
    expect(await host.sim.unitState(host.unit)).toMatchObject({
      activeState: "active",
      unitFileState: "enabled",
    });
    // cancelling again says it is over
    const again = await bench.slack.command(USERS.alice, `cancel ${id}`, { channel: CHANNEL });
    expect(again.ackResponse?.text).toContain("already finished: cancelled");
  }, 60_000);

  it("after the switch: puts the old service back", async () => {
    const host = bench.host("late");
    await host.sim.clearFaults();
    // the new model takes a few seconds to load, long enough to cancel while it does
    await host.sim.setFault("sglang", { models: { "Qwen3.5-397B": { loadSeconds: 4 } } });
    const { card, id } = await swapOn("late");
    await swaps.approve(card.ts);
    await swaps.outcome(card.ts, /Health/, 30_000);
    const ack = await bench.slack.command(USERS.bob, `cancel ${id}`, { channel: CHANNEL });
    expect(ack.ackResponse?.text).toContain("old service will be put back");
    await swaps.outcome(card.ts, /Cancelled/, 45_000);
    expect(JSON.stringify(bench.slack.message(CHANNEL, card.ts)?.blocks)).toContain("after the switch");
    expect(await host.sim.unitState(host.unit)).toMatchObject({
      activeState: "active",
      unitFileState: "enabled",
    });
    expect((await fetch(`http://127.0.0.1:${host.servingPort}/health`)).status).toBe(200);
  }, 90_000);

  it("refuses people who may not cancel, bad ids, and names the active swaps", async () => {
    const stranger = await bench.slack.command(USERS.mallory, "cancel sw-abc-123456", { channel: CHANNEL });
    expect(stranger.ackResponse?.text).toContain("not allowed");
    const bad = await bench.slack.command(USERS.alice, "cancel $(reboot)", { channel: CHANNEL });
    expect(bad.ackResponse?.text).toContain("is not a swap id");
    const none = await bench.slack.command(USERS.alice, "cancel", { channel: CHANNEL });
    expect(none.ackResponse?.text).toContain("You have no active swap");
  });
});

describe("/llm rollback", () => {
  it("says there is nothing to roll back to on a host no swap has changed", async () => {
    const ack = await bench.slack.command(USERS.alice, "rollback early", { channel: CHANNEL });
    expect(ack.ackResponse?.text).toContain("Nothing to roll back to");
  });

  it("after a swap, goes back to the unit that served before, with approval, without download or build", async () => {
    const host = bench.host("late");
    await host.sim.clearFaults();
    const { card } = await swapOn("late");
    await swaps.approve(card.ts);
    await swaps.outcome(card.ts, /Swapped/, 60_000);
    expect(await host.sim.unitState(host.unit)).toMatchObject({
      activeState: "inactive",
      unitFileState: "disabled",
    });

    const hfCalls = (await host.sim.calls()).filter((c) => c.cmd === "hf" || c.cmd === "pip").length;
    const before = new Set(bench.slack.messages(CHANNEL).map((m) => m.ts));
    const ack = await bench.slack.command(USERS.alice, "rollback late", { channel: CHANNEL });
    expect(ack.ackResponse?.text).toContain(`back to \`${host.unit}\``);
    const back = await bench.slack.waitFor(
      () => bench.slack.messages(CHANNEL).find((m) => !before.has(m.ts) && m.text.includes("→ late")),
      { what: "the rollback's card" },
    );
    const rollbackPlan = await swaps.plan(back.ts);
    expect(JSON.stringify(rollbackPlan.blocks)).toContain("nothing is downloaded or built");
    await swaps.approve(back.ts);
    await swaps.outcome(back.ts, /Swapped/, 60_000);
    expect(await host.sim.unitState(host.unit)).toMatchObject({
      activeState: "active",
      unitFileState: "enabled",
    });
    expect((await fetch(`http://127.0.0.1:${host.servingPort}/health`)).status).toBe(200);
    expect((await host.sim.calls()).filter((c) => c.cmd === "hf" || c.cmd === "pip").length).toBe(hfCalls);
    // and the model before is now what the host serves, so a second rollback goes forward again
    const again = await bench.slack.command(USERS.alice, "rollback late", { channel: CHANNEL });
    expect(again.ackResponse?.text).toContain("sglang-nvidia-qwen3-5-397b-a17b-nvfp4-43da92d.service");
    const id = /swap `(sw-[a-z0-9-]+)`/.exec(again.ackResponse?.text ?? "")?.[1];
    await bench.slack.command(USERS.alice, `cancel ${id}`, { channel: CHANNEL });
  }, 150_000);
});
