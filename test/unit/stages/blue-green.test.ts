import { describe, expect, it } from "vitest";
import { blueGreenMode } from "../../../jobs/swap/modes/blue-green.ts";
import type { HostFrontDoor } from "../../../src/front-door/host-front-door.ts";
import type { SwapPlan } from "../../../src/plan/types.ts";
import type { Fake } from "./fake-stage-context.ts";
import {
  ago,
  lateContext,
  NEW_UNIT,
  OLD_UNIT,
  PLAN,
  unitsServe,
  withFrontDoor,
} from "./late-stage-fixtures.ts";

/** The seeds' plan made blue/green: the new unit on GPUs 4–7 behind `green`, the old one behind `blue`. */
const BLUE_GREEN: SwapPlan = {
  ...PLAN,
  clients: {
    mode: "bluegreen",
    drainSeconds: 120,
    frontDoor: { server: "green", from: "blue", hold: "hold", holdSeconds: 300 },
    blueGreen: {
      gpus: "spare",
      devices: [4, 5, 6, 7],
      port: 30001,
      kvPerGpuBytes: 20e9,
      fullKvPerGpuBytes: 20e9,
      benchmark: "before-flip",
      flipBackSeconds: 300,
    },
  },
};

/**
 * A front door with both unit slots (`blue` ready at first, or `green` once the record says it flipped);
 * `inFlight` is what `sessions` answers for each look, in turn. Both units serve (old 111, new 222)
 * unless the test says otherwise with unitsServe.
 */
function door(fake: Fake, inFlight: number[] = [0]): { changes: string[][] } {
  const seen = { changes: [] as string[][] };
  const left = [...inFlight];
  const flipped = fake.swap.record.flip !== undefined && fake.swap.record.flip.flippedBackAt === undefined;
  const states: Record<string, string> = flipped
    ? { blue: "drain", green: "ready", hold: "maint" }
    : { blue: "ready", green: "maint", hold: "maint" };
  unitsServe(fake, { [OLD_UNIT]: 111, [NEW_UNIT]: 222 });
  withFrontDoor(fake, {
    async setStates(changes) {
      seen.changes.push(changes.map(([server, state]) => `${server} ${state}`));
      for (const [server, state] of changes) states[server] = state;
    },
    async setState(server, state) {
      seen.changes.push([`${server} ${state}`]);
      states[server] = state;
    },
    async sessions() {
      return left.length > 1 ? left.shift()! : (left[0] ?? 0);
    },
    async servers() {
      return Object.entries(states).map(([name, state]) => ({
        name,
        state: state as "ready",
        health: "up" as const,
        address: "127.0.0.1",
        port: name === "green" ? 30001 : 30000,
        sessions: 0,
        queued: 0,
      }));
    },
  });
  const fd = fake.ctx.host.frontDoor as { slots: HostFrontDoor["slots"] };
  fd.slots = [
    { server: "blue", port: 30000 },
    { server: "green", port: 30001 },
  ];
  return seen;
}

const besideRecord = { switch: { startedAt: ago(60), beside: true, newStartedAt: ago(60), done: true } };

describe("a blue/green swap's flip", () => {
  it("readies the new slot and drains the old one on one line, records it, and goes on to the window", async () => {
    const fake = lateContext({ plan: BLUE_GREEN, record: { step: "release", ...besideRecord } });
    fake.swap.stage("benchmark", "done");
    const seen = door(fake);
    expect(await blueGreenMode.takeRequests(fake.ctx)).toEqual({ next: "retire" });
    expect(seen.changes).toEqual([["green ready", "blue drain"]]);
    expect(fake.swap.record.flip).toMatchObject({ from: "blue", to: "green" });
    expect(fake.swap.record.downtimeSeconds).toBe(0);
    expect(fake.events()).toMatchObject([{ type: "flipped", from: "blue", to: "green" }]);
  });

  it("flips again when resumed (a worker died after the line), without a second record or event", async () => {
    const fake = lateContext({
      plan: BLUE_GREEN,
      record: { step: "release", ...besideRecord, flip: { from: "blue", to: "green", flippedAt: ago(2) } },
    });
    const seen = door(fake);
    expect(await blueGreenMode.takeRequests(fake.ctx)).toEqual({ next: "benchmark" });
    expect(seen.changes).toEqual([["green ready", "blue drain"]]);
    expect(fake.swap.record.flip?.flippedAt).toBe(ago(2));
    expect(fake.events()).toEqual([]);
  });
});

describe("the flip, only to a new unit that serves", () => {
  it("does not flip to a new unit that died since its sanity check (during the benchmark beside production)", async () => {
    const fake = lateContext({ plan: BLUE_GREEN, record: { step: "release", ...besideRecord } });
    fake.swap.stage("benchmark", "done");
    const seen = door(fake);
    unitsServe(fake, { [OLD_UNIT]: 111, [NEW_UNIT]: 0 });
    const result = await blueGreenMode.takeRequests(fake.ctx);
    expect(result).toMatchObject({
      fail: expect.stringMatching(
        new RegExp(`^the check before the flip found: \`${NEW_UNIT}\` is not active`),
      ),
      touched: true,
    });
    expect(seen.changes).toEqual([]);
    expect(fake.swap.record.flip).toBeUndefined();
  });
});

describe("the flip-back window and the old unit's retirement", () => {
  it("inside the window: parks the job for a second, and notes when the old unit's last request ended", async () => {
    const fake = lateContext({
      plan: BLUE_GREEN,
      record: { step: "retire", ...besideRecord, flip: { from: "blue", to: "green", flippedAt: ago(10) } },
    });
    door(fake, [0]);
    expect(await blueGreenMode.retire(fake.ctx)).toEqual({ wait: 1000 });
    expect(fake.swap.record.flip).toMatchObject({ cut: 0 });
    expect(fake.swap.record.flip?.drainedAt).toBeDefined();
    expect(fake.host.ran(/disable --now/)).toEqual([]);
  });

  it("after the window: the old slot out, the old unit stopped and disabled, and the thread told", async () => {
    const fake = lateContext({
      plan: BLUE_GREEN,
      record: { step: "retire", ...besideRecord, flip: { from: "blue", to: "green", flippedAt: ago(301) } },
    });
    const seen = door(fake, [0]);
    expect(await blueGreenMode.retire(fake.ctx)).toEqual({ next: "finish" });
    expect(seen.changes).toEqual([["blue maint"]]);
    expect(fake.host.ran(new RegExp(`disable --now.*${OLD_UNIT.replace(".", "\\.")}`))).toHaveLength(1);
    expect(fake.swap.record.flip?.retiredAt).toBeDefined();
    expect(fake.events()).toMatchObject([{ type: "retired", unit: OLD_UNIT, cut: 0 }]);
  });

  it("an old unit still busy at the drain's bound is stopped anyway, and the requests it cut are counted", async () => {
    const fake = lateContext({
      plan: BLUE_GREEN,
      host: { drainSeconds: 120 },
      record: { step: "retire", ...besideRecord, flip: { from: "blue", to: "green", flippedAt: ago(301) } },
    });
    door(fake, [3]);
    expect(await blueGreenMode.retire(fake.ctx)).toEqual({ next: "finish" });
    expect(fake.events()).toMatchObject([{ type: "retired", cut: 3 }]);
  });
});

describe("undoing a blue/green swap", () => {
  it("before the flip: the front door made sure to point at the old unit, the new one stopped; nothing to roll back", async () => {
    const fake = lateContext({ plan: BLUE_GREEN, record: { step: "rollback", ...besideRecord } });
    const seen = door(fake);
    const result = await blueGreenMode.undo(fake.ctx, "NaN in output");
    expect(result).toMatchObject({ ok: true, nothingToUndo: true });
    expect(seen.changes).toEqual([["blue ready", "green drain"], ["green maint"]]);
    expect(fake.host.ran(new RegExp(`disable --now.*${NEW_UNIT.replace(".", "\\.")}`))).toHaveLength(1);
    expect(fake.host.ran(/enable --now/)).toEqual([]);
    expect(fake.events()).toMatchObject([{ type: "discarded", unit: NEW_UNIT, serving: OLD_UNIT }]);
  });

  it("after the flip: a flip back to the old unit, which never stopped, then the new one drains and stops", async () => {
    const fake = lateContext({
      plan: BLUE_GREEN,
      record: { step: "rollback", ...besideRecord, flip: { from: "blue", to: "green", flippedAt: ago(5) } },
    });
    const seen = door(fake, [2, 0]);
    const result = await blueGreenMode.undo(fake.ctx, "cancelled after the switch");
    expect(result).toMatchObject({ ok: true });
    expect(result.nothingToUndo).toBeUndefined();
    expect(seen.changes).toEqual([["blue ready", "green drain"], ["green maint"]]);
    expect(fake.swap.record.flip?.flippedBackAt).toBeDefined();
    expect(fake.events().map((e) => e.type)).toEqual(["rolling-back", "flipped-back"]);
    expect(fake.host.ran(/enable --now/)).toEqual([]);
  });
});

describe("what a blue/green swap checks before it retires or undoes (issue 27 §1)", () => {
  const inWindow = () =>
    lateContext({
      plan: BLUE_GREEN,
      record: {
        step: "retire",
        ...besideRecord,
        verified: { unit: NEW_UNIT, mainPid: 222, at: ago(30) },
        flip: { from: "blue", to: "green", flippedAt: ago(10) },
      },
    });

  it("a new unit whose process is gone in the window fails the swap at once, touching nothing", async () => {
    const fake = inWindow();
    const seen = door(fake);
    unitsServe(fake, { [OLD_UNIT]: 111, [NEW_UNIT]: 999 });
    const result = await blueGreenMode.retire(fake.ctx);
    expect(result).toMatchObject({
      fail: expect.stringMatching(
        new RegExp(
          `\`${NEW_UNIT}\` stopped serving in the flip-back window: its process 222 is gone \\(MainPID 999 now`,
        ),
      ),
      touched: true,
    });
    expect(seen.changes).toEqual([]);
    expect(fake.host.ran(/disable --now/)).toEqual([]);
  });

  it("at the window's end, a new unit that fails the last check keeps the old one: nothing is stopped", async () => {
    const fake = lateContext({
      plan: BLUE_GREEN,
      record: { step: "retire", ...besideRecord, flip: { from: "blue", to: "green", flippedAt: ago(301) } },
    });
    const seen = door(fake);
    // the unit runs, but nothing answers on its port
    fake.host.on(/---direct---/, {
      stdout: `ActiveState=active\nSubState=running\nMainPID=222\n---direct---\n000\n---door---\n`,
    });
    const result = await blueGreenMode.retire(fake.ctx);
    expect(result).toMatchObject({
      fail: expect.stringMatching(
        /^the last check before stopping the old unit found: \/health_generate on port \d+ answered nothing$/,
      ),
    });
    expect(fake.swap.record.finalCheck).toMatchObject({ ok: false, unit: NEW_UNIT });
    expect(fake.swap.record.flip?.retiringAt).toBeUndefined();
    expect(seen.changes).toEqual([]);
    expect(fake.host.ran(/disable --now/)).toEqual([]);
  });

  it("does not flip back to an old unit that no longer serves: nothing changes, and it says why", async () => {
    const fake = lateContext({
      plan: BLUE_GREEN,
      record: {
        step: "rollback",
        ...besideRecord,
        switch: { ...besideRecord.switch, oldMainPid: 111 },
        flip: { from: "blue", to: "green", flippedAt: ago(5) },
      },
    });
    const seen = door(fake);
    unitsServe(fake, { [OLD_UNIT]: 0, [NEW_UNIT]: 222 });
    const result = await blueGreenMode.undo(fake.ctx, "cancelled after the switch");
    expect(result).toMatchObject({
      ok: false,
      notDone: expect.stringMatching(new RegExp(`^\`${OLD_UNIT}\` is not active \\(failed\\)`)),
    });
    expect(seen.changes).toEqual([]);
    expect(fake.host.ran(/disable --now|enable --now/)).toEqual([]);
    expect(fake.swap.record.flip?.flippedBackAt).toBeUndefined();
    expect(fake.events()).toEqual([]);
  });

  it("after the flip back, stops the new unit only once the old one passed the check through the front door", async () => {
    const fake = lateContext({
      plan: BLUE_GREEN,
      record: {
        step: "rollback",
        ...besideRecord,
        switch: { ...besideRecord.switch, oldMainPid: 111 },
        flip: { from: "blue", to: "green", flippedAt: ago(5) },
      },
    });
    door(fake);
    const result = await blueGreenMode.undo(fake.ctx, "NaN in output");
    expect(result).toMatchObject({ ok: true });
    expect(fake.swap.record.finalCheck).toMatchObject({ ok: true, unit: OLD_UNIT, mainPid: 111 });
    const order = fake.host.commands.map((c) => c.text);
    const checked = order.findLastIndex((t) => t.includes("---direct---") && t.includes(OLD_UNIT));
    const stopped = order.findIndex((t) => t.includes(`disable --now ${NEW_UNIT}`));
    expect(checked).toBeGreaterThanOrEqual(0);
    expect(stopped).toBeGreaterThan(checked);
  });
});
