import { describe, expect, it } from "vitest";
import { blueGreenMode } from "../../../jobs/swap/modes/blue-green.ts";
import { restartStage } from "../../../jobs/swap/stages/restart-full-memory.ts";
import type { SwapPlan } from "../../../src/plan/types.ts";
import {
  ago,
  healthAnswer,
  healthPoll,
  healthyJournal,
  lateContext,
  NEW_UNIT,
  OLD_UNIT,
  oomJournal,
  PLAN,
  saneAnswer,
  unitsServe,
  withFrontDoor,
} from "./late-stage-fixtures.ts";

/**
 * A blue/green swap on shared GPUs with swaps.restartAtFullMemory: the old unit has stopped, and the new
 * one restarts without the fraction it had beside it, behind the front door's hold.
 */
const SHARED: SwapPlan = {
  ...PLAN,
  unitText: PLAN.unitText.replace("--tp-size 8", "--tp-size 8 --mem-fraction-static 0.71"),
  clients: {
    mode: "bluegreen",
    drainSeconds: 20,
    frontDoor: { server: "green", from: "blue", hold: "hold", holdSeconds: 300 },
    blueGreen: {
      gpus: "shared",
      devices: [0, 1, 2, 3, 4, 5, 6, 7],
      port: 30001,
      kvPerGpuBytes: 9e9,
      fullKvPerGpuBytes: 50e9,
      memFractionStatic: 0.71,
      benchmark: "after-flip",
      flipBackSeconds: 300,
      restart: { unitText: PLAN.unitText },
    },
  },
};

const retired = {
  step: "restart" as const,
  switch: { startedAt: ago(120), beside: true as const, newStartedAt: ago(120), done: true },
  flip: {
    from: "blue",
    to: "green",
    flippedAt: ago(60),
    drainedAt: ago(59),
    cut: 0,
    retiringAt: ago(5),
    retiredAt: ago(4),
  },
};

function restartContext(record: Record<string, unknown> = {}) {
  const fake = lateContext({ plan: SHARED, record: { ...retired, ...record } });
  const changes: string[][] = [];
  withFrontDoor(fake, {
    async setStates(list) {
      changes.push(list.map(([server, state]) => `${server} ${state}`));
    },
    async sessions() {
      return 0;
    },
  });
  fake.host.on(/\/generate$/, saneAnswer);
  return { fake, changes };
}

const writes = (fake: ReturnType<typeof restartContext>["fake"]) =>
  fake.host.commands.filter((c) => /tee /.test(c.text)).map((c) => c.stdin);

describe("the restart at full memory after a blue/green swap on shared GPUs", () => {
  it("holds, drains the unit's slot, restarts it without the fraction beside, checks it, then releases the held requests", async () => {
    const { fake, changes } = restartContext();
    fake.host.on(healthPoll(NEW_UNIT), healthAnswer("active", "200", healthyJournal(NEW_UNIT)));
    expect(await restartStage(fake.ctx)).toEqual({ next: "finish" });
    expect(changes).toEqual([
      ["hold ready", "green drain"],
      ["green ready", "hold maint"],
    ]);
    expect(writes(fake)).toEqual([PLAN.unitText]);
    expect(SHARED.unitText).toContain("--mem-fraction-static 0.71");
    // stop, then start: the commands a swap's sudoers rules allow already
    const order = fake.host.commands
      .map((c) => c.text)
      .filter((t) => /systemctl (disable|enable) --now/.test(t));
    expect(order).toEqual([
      expect.stringContaining(`disable --now ${NEW_UNIT}`),
      expect.stringContaining(`enable --now ${NEW_UNIT}`),
    ]);
    // health and sanity on the unit's own port
    expect(fake.host.ran(/127\.0\.0\.1:30001\/health_generate/).length).toBeGreaterThan(0);
    expect(fake.host.ran(/127\.0\.0\.1:30001\/generate/).length).toBeGreaterThan(0);
    const restart = fake.swap.record.restart;
    expect(restart?.releasedAt).toBeDefined();
    expect(restart?.failed).toBeUndefined();
    expect(fake.events()).toMatchObject([
      { type: "restarting", unit: NEW_UNIT, holdSeconds: 300 },
      { type: "restarted", unit: NEW_UNIT, kvPerGpuBytes: 50e9 },
    ]);
    expect(fake.events()[1]).not.toHaveProperty("failed");
  });

  it("a restart that does not serve puts the unit back as it served beside the old one, and releases to it", async () => {
    const { fake, changes } = restartContext();
    let polls = 0;
    fake.host.on(healthPoll(NEW_UNIT), () => {
      polls += 1;
      // the first start (full memory) fails; the second (the fraction beside) serves
      return polls === 1
        ? healthAnswer("failed", "000", oomJournal(NEW_UNIT))
        : healthAnswer("active", "200", healthyJournal(NEW_UNIT));
    });
    expect(await restartStage(fake.ctx)).toEqual({ next: "finish" });
    expect(writes(fake)).toEqual([PLAN.unitText, SHARED.unitText]);
    expect(changes.at(-1)).toEqual(["green ready", "hold maint"]);
    const restart = fake.swap.record.restart;
    expect(restart?.failed).toMatch(/OutOfMemoryError/);
    expect(restart?.reverted).toBe(true);
    expect(fake.events().at(-1)).toMatchObject({
      type: "restarted",
      kvPerGpuBytes: 9e9,
      failed: expect.stringMatching(/OutOfMemoryError/),
    });
  });

  it("when the unit serves in neither form, the swap fails saying nothing serves, and the hold stays", async () => {
    const { fake, changes } = restartContext();
    fake.host.on(healthPoll(NEW_UNIT), healthAnswer("failed", "000", oomJournal(NEW_UNIT)));
    const result = await restartStage(fake.ctx);
    expect(result).toMatchObject({
      end: "failed",
      reason: expect.stringMatching(
        /the restart at full memory failed .* did not serve again as it did beside the old unit either .*: nothing serves on gpu-1, whose old unit has stopped/,
      ),
    });
    expect(changes.every((c) => c[0] === "hold ready")).toBe(true);
  });

  it("resumed after a worker died mid-restart: it does not restart again, and goes on to the checks", async () => {
    const { fake } = restartContext({
      restart: { heldAt: ago(10), drainedAt: ago(9), cut: 0, restartedAt: ago(8) },
    });
    fake.host.on(healthPoll(NEW_UNIT), healthAnswer("active", "200", healthyJournal(NEW_UNIT)));
    expect(await restartStage(fake.ctx)).toEqual({ next: "finish" });
    expect(writes(fake)).toEqual([]);
    expect(fake.host.ran(/systemctl (disable|enable) --now/)).toEqual([]);
    // the hold was put again (idempotent), no second "restarting" event
    expect(fake.events().map((e) => e.type)).toEqual(["restarted"]);
  });
});

describe("a restart at full memory that cannot go on", () => {
  it("ends the swap as failed, saying what is where, and never flips back to the stopped old unit", async () => {
    const fake = lateContext({ plan: SHARED, record: retired });
    withFrontDoor(fake, {
      async setStates() {
        throw new Error("connect ENOENT /run/haproxy/admin.sock");
      },
    });
    const result = await restartStage(fake.ctx);
    expect(result).toMatchObject({
      end: "failed",
      reason: expect.stringMatching(
        /the restart at full memory could not go on \(connect ENOENT \/run\/haproxy\/admin\.sock\); .* is installed in place of the old unit, which has stopped/,
      ),
    });
    expect(fake.host.ran(/systemctl (disable|enable) --now/)).toEqual([]);
  });
});

describe("a rollback once the old unit has stopped (the new one failed its last check)", () => {
  it("starts the old unit again on its port, awaits its health, and sends the front door back to its slot", async () => {
    const changes: string[][] = [];
    const fake = lateContext({ plan: SHARED, record: { ...retired, step: "rollback" } });
    withFrontDoor(fake, {
      async setStates(list) {
        changes.push(list.map(([server, state]) => `${server} ${state}`));
      },
    });
    unitsServe(fake, { [OLD_UNIT]: 333 });
    fake.host.on(healthPoll(OLD_UNIT), healthAnswer("active", "200", healthyJournal(OLD_UNIT)));
    const result = await blueGreenMode.undo(fake.ctx, "the last check before the end found: it crashed");
    expect(result).toMatchObject({ ok: true, detail: expect.stringMatching(/started again and healthy/) });
    expect(fake.host.ran(/systemctl (disable|enable) --now/)).toEqual([
      expect.stringContaining(`disable --now ${NEW_UNIT}`),
      expect.stringContaining(`enable --now ${OLD_UNIT}`),
    ]);
    expect(changes).toEqual([["blue ready", "green maint"]]);
    expect(fake.swap.record.verified).toMatchObject({ unit: OLD_UNIT, mainPid: 333 });
    expect(fake.events().map((e) => e.type)).toEqual(["rolling-back"]);
  });
});
