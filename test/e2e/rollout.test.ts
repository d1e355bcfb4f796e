import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Bench, CHANNEL, QUICK_BENCH, startBench, USERS } from "../../testbench/bench.ts";
import { makeModel } from "../../testbench/hub/index.ts";
import { RolloutDriver } from "../../testbench/rollout-driver.ts";
import type { SlackMessage } from "../../testbench/slack/index.ts";
import { SwapDriver } from "../../testbench/swap-driver.ts";

/**
 * A rollout on the bench: four hosts of one group (`groups: prod: gpu-[1-4]`), a canary, then two waves
 * (50 %, 100 %), one approval on one plan in the rollout's thread. Then a canary whose model answers NaN:
 * the canary rolls itself back and nothing beyond it is touched.
 */
const QWEN = "nvidia/Qwen3.5-397B-A17B-NVFP4";
const DENSE = "Qwen/Qwen3-8B-FP8";
const HOSTS = ["gpu-1", "gpu-2", "gpu-3", "gpu-4"];
let bench: Bench;
let swaps: SwapDriver;
let rollouts: RolloutDriver;

beforeAll(async () => {
  bench = await startBench({
    ...QUICK_BENCH,
    swaps: { pollSeconds: 0.2, cardUpdateSeconds: 1 },
    hosts: HOSTS.map((name) => ({ name, gpus: "8x-b200", serving: { preset: "qwen3-fp8-dense" } })),
  });
  await bench.editConfig((config) => {
    // the sims' tok/s follow the bench machine's load (test files share 2 cores): the gate's arithmetic is
    // held by test/unit/rollout.test.ts, and a wide margin here keeps load from halting the rollout
    config.groups = {
      prod: { hosts: "gpu-[1-4]", canary: 1, waves: [50, 100], maxUnavailable: 2, throughputMargin: 75 },
    };
  });
  bench.hub.addModel(makeModel("qwen3.5-moe-nvfp4"));
  bench.hub.addModel(makeModel("qwen3-fp8-dense"));
  await bench.startBot();
  swaps = new SwapDriver(bench);
  rollouts = new RolloutDriver(bench, swaps);
}, 180_000);

afterAll(async () => {
  await swaps?.close();
  await bench?.stop();
});

/** The weight files of a model directory and their sha256 (what a copy must have brought over whole). */
async function filesIn(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of (await readdir(dir)).sort()) {
    if (name.startsWith(".")) continue; // hf's .cache of the host that downloaded
    out[name] = createHash("sha256")
      .update(await readFile(join(dir, name)))
      .digest("hex");
  }
  return out;
}

function cardText(card: SlackMessage): string {
  return JSON.stringify(bench.slack.message(CHANNEL, card.ts)?.blocks ?? []);
}

describe("a rollout over a group", () => {
  it("refuses what it cannot do, with what it accepts, and queues nothing", async () => {
    const unknown = await bench.slack.command(USERS.alice, `swap ${QWEN} --group nope`, { channel: CHANNEL });
    expect(unknown.ackResponse?.text).toContain("Unknown group nope");
    expect(unknown.ackResponse?.text).toContain("Groups: prod");
    const both = await bench.slack.command(USERS.alice, `swap ${QWEN} --host gpu-1 --group prod`, {
      channel: CHANNEL,
    });
    expect(both.ackResponse?.text).toContain("give one of --host, --group and --hosts");
    const outside = await bench.slack.command(USERS.alice, `swap ${QWEN} --hosts gpu-[3-5]`, {
      channel: CHANNEL,
    });
    expect(outside.ackResponse?.text).toContain("Unknown host `gpu-5`");
    const backwards = await bench.slack.command(USERS.alice, `swap ${QWEN} --hosts gpu-[4-1]`, {
      channel: CHANNEL,
    });
    expect(backwards.ackResponse?.text).toContain("runs backwards");
    expect(bench.slack.messages(CHANNEL)).toHaveLength(0);
    for (const host of HOSTS) expect(await (await swaps.store()).locks.hostHolder(host)).toBeUndefined();
  });

  it("plans every host, takes one approval, and moves in waves behind the canary's gate", async () => {
    const { card, id } = await rollouts.request(`${QWEN} --group prod`);
    const plan = await rollouts.plan(card);
    const planText = JSON.stringify(plan.blocks);
    for (const host of HOSTS) expect(planText).toContain(host);
    expect(planText).toContain("canary: gpu-1");
    expect(planText).toContain("wave 2: gpu-2");
    expect(planText).toContain("wave 3: gpu-3, gpu-4");
    // the hosts' own threads show no plan to approve: there is one, the rollout's
    const kids = await rollouts.children(id);
    for (const child of kids.values()) {
      const hostCard = swaps.cardsOf(child.id)[0];
      expect(hostCard).toBeDefined();
      expect(swaps.plansOf(hostCard!.ts)).toHaveLength(0);
      expect(child.step).toBe("prepare");
      expect(child.switch).toBeUndefined();
    }
    await bench.slack.clickButton(USERS.bob, CHANNEL, plan.ts, "swap_approve", id);
    await rollouts.outcome(card, /Rolled out/);

    const done = await rollouts.record(id);
    expect(done.outcome).toBe("succeeded");
    expect(done.waves.map((w) => w.passed)).toEqual([true, true, true]);
    const after = await rollouts.children(id);
    for (const [host, child] of after) {
      expect(child.outcome, host).toBe("succeeded");
      expect(child.decision?.by).toBe(USERS.bob);
    }
    // no host of a wave switched before the wave before it had ended and passed
    const switchedAt = (host: string) => Date.parse(after.get(host)!.switch!.startedAt);
    const endedAt = (host: string) => Date.parse(after.get(host)!.finishedAt!);
    expect(switchedAt("gpu-2")).toBeGreaterThanOrEqual(endedAt("gpu-1"));
    expect(switchedAt("gpu-3")).toBeGreaterThanOrEqual(endedAt("gpu-2"));
    expect(switchedAt("gpu-4")).toBeGreaterThanOrEqual(endedAt("gpu-2"));

    const thread = bench.slack
      .thread(CHANNEL, card.ts)
      .map((m) => m.text)
      .join("\n");
    expect(thread).toMatch(/Approved by .*\n.*Wave 1 \(the canary\): gpu-1/s);
    expect(thread).toContain("Wave 1 passed its gate");
    expect(thread).toMatch(
      /Wave 3 passed its gate \(output tok\/s: gpu-3 [\d.]+, gpu-4 [\d.]+; the canary's [\d.]+\)/,
    );
    const rows = cardText(card);
    for (const host of HOSTS) expect(rows).toMatch(new RegExp(`${host} +(canary|\\d) +✓ serves it`));
    // each host's thread is a link on the card (chat.getPermalink of its swap's card), as soon as the
    // host's card is posted (its posts are never urgent: one may come after the rollout's end)
    const linked = (host: string, ts: string) => cardText(card).includes(`/p${ts.replace(".", "")}|${host}>`);
    await bench.slack.waitFor(
      () => [...after].every(([host, child]) => linked(host, swaps.cardsOf(child.id)[0]!.ts)),
      { what: "the rollout's card to link every host's thread", timeoutMs: 60_000 },
    );

    // the weights crossed the Hub once: gpu-1 fetched them, every other host copied them from a peer
    // that held them (rsync over SSH between the bench's sshds), each copy checked against the Hub's sha256
    const model = after.get("gpu-1")!.model!;
    // (the bot's own reads of config.json and the like for its plans come on top: the issue's bar, 1.05 ×)
    expect(bench.hub.bytesServed(QWEN)).toBeGreaterThanOrEqual(model.totalBytes);
    expect(bench.hub.bytesServed(QWEN)).toBeLessThanOrEqual(model.totalBytes * 1.05);
    expect(after.get("gpu-1")!.peerCopy).toMatchObject({ state: "hub" });
    for (const host of HOSTS.slice(1)) {
      const child = after.get(host)!;
      expect(child.peerCopy, host).toMatchObject({
        state: "copied",
        from: expect.stringMatching(/^gpu-[1-4]$/),
      });
      expect(child.peerCopy!.from).not.toBe(host);
      const hostThread = bench.slack
        .thread(CHANNEL, swaps.cardsOf(child.id)[0]!.ts)
        .map((m) => m.text)
        .join("\n");
      expect(hostThread, host).toContain(`Copied from ${child.peerCopy!.from}, not the Hub`);
      expect(await filesIn(child.plan!.modelDir), host).toEqual(
        await filesIn(after.get("gpu-1")!.plan!.modelDir),
      );
    }
    // every host's swap has ended: none lets the rollout's key in any more
    const authorized = await readFile(join(bench.sshd.home, ".ssh", "authorized_keys"), "utf8");
    expect(authorized).not.toContain(`modelswap-peer-copy:${id}`);
  }, 300_000);

  it("halts when the canary fails: it rolls itself back, and no other host is touched", async () => {
    // the canary's new model answers NaN (SGLANG.md: `models` matches a part of the model's path); the
    // model it served before answers well, so its rollback holds
    await bench.host("gpu-1").sim.setFault("sglang", { models: { "Qwen3-8B": { mode: "nan" } } });
    const before = await rollouts.children((await (await swaps.store()).rollouts.recent(1))[0]!.id);
    const { card, id } = await rollouts.request(`${DENSE} --group prod`);
    const plan = await rollouts.plan(card);
    await bench.slack.react(USERS.bob, CHANNEL, plan.ts, "white_check_mark");
    await rollouts.outcome(card, /Halted/);
    await bench.host("gpu-1").sim.setFault("sglang", {});
    // its hosts' cards come after it ended (never urgent): its card links their threads all the same
    await bench.slack.waitFor(() => HOSTS.every((h) => cardText(card).includes(`|${h}>`)), {
      what: "the halted rollout's card to link every host's thread",
      timeoutMs: 60_000,
    });

    const halted = await rollouts.record(id);
    expect(halted.outcome).toBe("halted");
    expect(halted.reason).toContain("gpu-1 was rolled back");
    const kids = await rollouts.children(id);
    expect(kids.get("gpu-1")!.outcome).toBe("rolled_back");
    for (const host of HOSTS.slice(1)) {
      const child = kids.get(host)!;
      expect(child.outcome, host).toBe("cancelled");
      expect(child.switch, host).toBeUndefined();
      expect(child.decision, host).toBeUndefined();
      // the host's service was never stopped: what served before the rollout serves still
      const serving = before.get(host)!.plan!.unitName;
      expect(await swaps.stopsOf(host, serving), host).toBe(0);
    }
    const thread = bench.slack
      .thread(CHANNEL, card.ts)
      .map((m) => m.text)
      .join("\n");
    expect(thread).toContain("Rollout halted* at wave 1");
    expect(thread).toContain("Not touched (their swaps cancelled, files kept): gpu-2, gpu-3, gpu-4");
  }, 300_000);

  it("stops on /llm cancel before its approval: every host's swap ends before its switch", async () => {
    await bench.host("gpu-1").sim.setFault("sglang", {});
    const { card, id } = await rollouts.request(`${DENSE} --group prod`);
    await rollouts.plan(card);
    const stranger = await bench.slack.command(USERS.carol, `cancel ${id}`, { channel: CHANNEL });
    expect(stranger.ackResponse?.text).toContain("who requested rollout");
    const ack = await bench.slack.command(USERS.alice, `cancel ${id}`, { channel: CHANNEL });
    expect(ack.ackResponse?.text).toContain(`Cancelling rollout \`${id}\``);
    await rollouts.outcome(card, /Cancelled/);
    expect((await rollouts.record(id)).outcome).toBe("cancelled");
    for (const [host, child] of await rollouts.children(id)) {
      expect(child.outcome, host).toBe("cancelled");
      expect(child.switch, host).toBeUndefined();
    }
    expect(rollouts.threadText(card)).toContain(
      `Rollout cancelled* by <@${USERS.alice}> before its plan was approved`,
    );
    // the plan says it can no longer be decided on
    expect(JSON.stringify(rollouts.plansOf(card)[0]?.blocks)).not.toContain("swap_approve");
  }, 300_000);

  it("halts at a wave where one host fails: its other host is taken back, the earlier waves kept", async () => {
    // gpu-3's copy of the new model answers NaN; gpu-4, in the same wave, serves it well
    await bench.host("gpu-3").sim.setFault("sglang", { models: { "Qwen3-8B": { mode: "nan" } } });
    const before = await rollouts.children((await (await swaps.store()).rollouts.recent(1))[0]!.id);
    const { card, id } = await rollouts.request(`${DENSE} --group prod`);
    await rollouts.approve(card);
    await rollouts.outcome(card, /Halted/);
    await bench.host("gpu-3").sim.setFault("sglang", {});

    const halted = await rollouts.record(id);
    expect(halted.outcome).toBe("halted");
    expect(halted.reason).toContain("wave 3 did not pass its gate: gpu-3 was rolled back");
    const kids = await rollouts.children(id);
    expect(kids.get("gpu-1")!.outcome).toBe("succeeded");
    expect(kids.get("gpu-2")!.outcome).toBe("succeeded");
    expect(kids.get("gpu-3")!.outcome).toBe("rolled_back");
    expect(kids.get("gpu-4")!.outcome).toBe("succeeded");
    // gpu-4's own swap succeeded, and the rollout took it back: it serves what it served before again
    const undo = halted.hosts.find((h) => h.host === "gpu-4")!.undo;
    expect(undo).toMatchObject({ outcome: "succeeded" });
    const old = before.get("gpu-4")!.plan!.host.currentUnit.name;
    expect((await (await swaps.store()).hosts.serving("gpu-4"))?.unit).toBe(old);
    const active = await bench.host("gpu-4").sim.exec(`systemctl is-active ${old}`);
    expect(active.stdout.trim()).toBe("active");
    const undoSwap = await swaps.record(undo!.swapId!);
    expect(undoSwap?.decision?.by).toBe(USERS.bob);
    const thread = rollouts.threadText(card);
    expect(thread).toContain("Taken back (their own swaps succeeded, but the wave did not pass): gpu-4.");
    expect(thread).toContain("Serving the new model from earlier waves, left so: gpu-1, gpu-2.");
  }, 300_000);

  it("takes a halted rollout's kept hosts back with /llm rollback --rollout: one plan, one approval", async () => {
    const bad = await bench.slack.command(USERS.alice, "rollback --rollout nope", { channel: CHANNEL });
    expect(bad.ackResponse?.text).toContain("rollout ids look like");
    const last = (await (await swaps.store()).rollouts.recent(1))[0]!;
    expect(last.outcome).toBe("halted");
    const kept = await rollouts.children(last.id);
    const ack = await bench.slack.command(USERS.alice, `rollback --rollout ${last.id}`, { channel: CHANNEL });
    // the answer names the rollout it takes back, then its own
    const id = [...(ack.ackResponse?.text ?? "").matchAll(/rollout `(ro-[a-z0-9-]+)`/g)].at(-1)?.[1];
    expect(id).not.toBe(last.id);
    expect(ack.ackResponse?.text, ack.ackResponse?.text).toContain("a rollback of rollout");
    const card = await bench.slack.waitFor(() => rollouts.cardsOf(id!).at(0), {
      what: "the undo's card",
      timeoutMs: 30_000,
    });
    await rollouts.approve(card);
    await rollouts.outcome(card, /Rolled out/);
    const undo = await rollouts.record(id!);
    expect(undo.undoes).toBe(last.id);
    // gpu-1 and gpu-2 kept the halted rollout's model; gpu-3 rolled itself back and gpu-4 was taken back
    expect(undo.hosts.map((h) => h.host)).toEqual(["gpu-1", "gpu-2"]);
    for (const host of ["gpu-1", "gpu-2"]) {
      const before = kept.get(host)!.plan!.host.currentUnit.name;
      expect((await (await swaps.store()).hosts.serving(host))?.unit, host).toBe(before);
    }
    expect(JSON.stringify(rollouts.plansOf(card)[0]?.blocks)).toContain("on each host's disk already");
  }, 300_000);
});
