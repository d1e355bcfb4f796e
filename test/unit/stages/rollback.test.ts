import { describe, expect, it } from "vitest";
import { coldMode } from "../../../jobs/swap/modes/cold.ts";
import { CodedError } from "../../../src/errors.ts";
import type { SwapRecord } from "../../../src/swap/swap-record.ts";
import type { Fake } from "./fake-stage-context.ts";
import {
  ago,
  approvedRecord,
  healthAnswer,
  healthPoll,
  healthyJournal,
  type LateOptions,
  lateContext,
  later,
  loadingJournal,
  NEW_UNIT,
  OLD_UNIT,
  qwenPlan,
  T0,
  unreachable,
  withFrontDoor,
} from "./late-stage-fixtures.ts";

const WHY = `${NEW_UNIT} failed: torch.OutOfMemoryError: CUDA out of memory.`;

/** A swap whose new unit failed its health check after a complete switch (or the part of it given). */
function failedAfterSwitch(options: LateOptions & { switch?: SwapRecord["switch"] } = {}): Fake {
  const stages = approvedRecord().stages!;
  return lateContext({
    ...options,
    record: {
      step: "rollback",
      reason: WHY,
      switch: options.switch ?? {
        startedAt: ago(130),
        oldStoppedAt: ago(120),
        newStartedAt: ago(119),
        done: true,
      },
      stages: {
        ...stages,
        switch: { state: "done", startedAt: ago(130), finishedAt: ago(119) },
        health: { state: "failed", startedAt: ago(119), finishedAt: ago(1), detail: WHY },
      },
      ...options.record,
    },
  });
}

/** The old unit's health: loading for `loadingPolls` polls, then serving. */
function oldUnitComesBack(fake: Fake, loadingPolls = 2): { count: () => number } {
  let n = 0;
  fake.host.on(healthPoll(OLD_UNIT), () =>
    n++ < loadingPolls
      ? healthAnswer("activating", "000", loadingJournal(OLD_UNIT))
      : healthAnswer("active", "200", healthyJournal(OLD_UNIT)),
  );
  return { count: () => n };
}

/** The commands run, health polls shown as "poll <unit>", a read of a unit's process as "pid <unit>". */
function commands(fake: Fake): string[] {
  return fake.host.commands.map((c) => {
    const polled = /^\s*systemctl is-active (\S+) \|\| true/.exec(c.text);
    const pid = /^systemctl show -p MainPID --value (\S+)$/.exec(c.text);
    return polled ? `poll ${polled[1]}` : pid ? `pid ${pid[1]}` : c.text;
  });
}

/** A front door (hosts[].frontDoor) whose HAProxy cannot be reached: every Runtime API call fails. */
function unreachableFrontDoor(fake: Fake): { calls: number } {
  const seen = { calls: 0 };
  const fail = async () => {
    seen.calls++;
    throw new CodedError(
      "FRONT_DOOR_UNREACHABLE",
      "nothing answers on HAProxy's socket /run/haproxy/admin.sock on gpu-1",
      "start HAProxy",
    );
  };
  withFrontDoor(fake, { setStates: fail, setState: fail, sessions: fail, servers: fail });
  return seen;
}

/** A front door whose HAProxy answers: the state changes asked, nothing in flight anywhere. */
function workingFrontDoor(fake: Fake): { states: [string, string][][] } {
  const seen = { states: [] as [string, string][][] };
  withFrontDoor(fake, {
    setStates: async (states: readonly (readonly [string, string])[]) => {
      seen.states.push(states.map(([a, b]) => [a, b]));
    },
    setState: async (server: string, state: string) => {
      seen.states.push([[server, state]]);
    },
    sessions: async () => 0,
  } as never);
  return seen;
}

const rollingBack = (fake: Fake) => fake.events().filter((e) => e.type === "rolling-back");

describe("rollback", () => {
  it("disables the new unit, enables the old one and waits for its health", async () => {
    const fake = failedAfterSwitch();
    const health = oldUnitComesBack(fake);

    const result = await coldMode.undo(fake.ctx, WHY);

    expect(result).toEqual({ ok: true, detail: `${OLD_UNIT} is healthy again` });
    expect(commands(fake)).toEqual([
      `systemctl disable --now ${NEW_UNIT}`,
      `systemctl enable --now ${OLD_UNIT}`,
      `poll ${OLD_UNIT}`,
      `poll ${OLD_UNIT}`,
      `poll ${OLD_UNIT}`,
      // the process the final check will expect of it
      `pid ${OLD_UNIT}`,
    ]);
    expect(health.count()).toBe(3);
    expect(fake.swap.record.rollbackStartedAt).toBe(later(0));
    // the downtime is to the old unit's health again, one number for the card and the metric
    expect(fake.swap.record.downtimeSeconds).toBeGreaterThanOrEqual(120);
    expect(fake.events()).toEqual([
      { type: "rolling-back", to: OLD_UNIT, stopping: NEW_UNIT, why: WHY, at: later(0) },
    ]);
  });

  it("puts the old unit back even when the front door cannot be reached, and says the front door was not put back", async () => {
    const fake = failedAfterSwitch({
      record: { frontDoor: { heldAt: ago(125), drainedAt: ago(121), cut: 0 } },
    });
    const door = unreachableFrontDoor(fake);
    oldUnitComesBack(fake);

    const result = await coldMode.undo(fake.ctx, WHY);

    // the units come first: HAProxy being away must not keep the old model from serving again (the new
    // unit, which no client reached, killed at once)
    expect(commands(fake).slice(0, 2)).toEqual([
      `systemctl kill --signal=SIGKILL ${NEW_UNIT}\nsystemctl disable --now ${NEW_UNIT}`,
      `systemctl enable --now ${OLD_UNIT}`,
    ]);
    expect(door.calls).toBeGreaterThanOrEqual(2); // the hold, then the release, each tried
    expect(result.ok).toBe(false);
    expect(result.detail).toMatch(
      new RegExp(
        `^${OLD_UNIT} is healthy again; but the front door could not be put back: .*FRONT_DOOR_UNREACHABLE`,
      ),
    );
    expect(result.unreachable).toBeUndefined();
  });

  it("takes the old unit's process from the health probe that found it healthy: no second look", async () => {
    const fake = failedAfterSwitch();
    fake.host.on(healthPoll(OLD_UNIT), () => healthAnswer("active", "200", healthyJournal(OLD_UNIT), 4242));

    await coldMode.undo(fake.ctx, WHY);

    expect(commands(fake)).toEqual([
      `systemctl disable --now ${NEW_UNIT}`,
      `systemctl enable --now ${OLD_UNIT}`,
      `poll ${OLD_UNIT}`,
    ]);
    expect(fake.swap.record.verified).toMatchObject({ unit: OLD_UNIT, mainPid: 4242 });
  });

  it("uses sudo -n for systemctl on a host configured with sudo", async () => {
    const fake = failedAfterSwitch({ host: { sudo: true } });
    oldUnitComesBack(fake, 0);

    await coldMode.undo(fake.ctx, WHY);

    expect(commands(fake)).toEqual([
      `sudo -n systemctl disable --now ${NEW_UNIT}`,
      `sudo -n systemctl enable --now ${OLD_UNIT}`,
      `poll ${OLD_UNIT}`,
      `pid ${OLD_UNIT}`,
    ]);
  });

  it("kills a new unit that failed behind the front door's hold (no client reached it) before its stop, with sudo -n", async () => {
    const fake = failedAfterSwitch({
      host: { sudo: true },
      record: { frontDoor: { heldAt: ago(125), drainedAt: ago(121), cut: 0 } },
    });
    const door = workingFrontDoor(fake);
    oldUnitComesBack(fake, 0);

    const result = await coldMode.undo(fake.ctx, WHY);

    expect(result.ok).toBe(true);
    // killed and stopped in one round trip, each under sudo
    expect(commands(fake).slice(0, 2)).toEqual([
      `sudo -n systemctl kill --signal=SIGKILL ${NEW_UNIT}\nsudo -n systemctl disable --now ${NEW_UNIT}`,
      `sudo -n systemctl enable --now ${OLD_UNIT}`,
    ]);
    expect(door.states.at(-1)).toEqual([
      ["blue", "ready"],
      ["hold", "maint"],
    ]);
  });

  it("lets a new unit that clients reached drain: after a release, no kill, only its stop", async () => {
    const fake = failedAfterSwitch({
      record: { frontDoor: { heldAt: ago(125), drainedAt: ago(121), cut: 0, releasedAt: ago(60) } },
    });
    workingFrontDoor(fake);
    oldUnitComesBack(fake, 0);

    await coldMode.undo(fake.ctx, WHY);

    expect(commands(fake).slice(0, 2)).toEqual([
      `systemctl disable --now ${NEW_UNIT}`,
      `systemctl enable --now ${OLD_UNIT}`,
    ]);
    expect(fake.swap.record.frontDoor?.heldAgain).toBe(true);
  });

  it("still lets the new unit drain when the rollback resumes after holding again (the release is marked)", async () => {
    const fake = failedAfterSwitch({
      record: {
        rollbackStartedAt: ago(5),
        frontDoor: { heldAt: ago(4), drainedAt: ago(121), cut: 0, heldAgain: true },
      },
    });
    workingFrontDoor(fake);
    oldUnitComesBack(fake, 0);

    await coldMode.undo(fake.ctx, WHY);

    expect(commands(fake).some((c) => c.includes("systemctl kill"))).toBe(false);
  });

  it("announces itself once: a retried rollback does not emit rolling-back again", async () => {
    const fake = failedAfterSwitch();
    fake.host.on(/systemctl enable --now/, unreachable());

    const first = await coldMode.undo(fake.ctx, WHY);
    expect(first).toMatchObject({
      ok: false,
      unreachable: expect.objectContaining({ code: "HOST_UNREACHABLE" }),
    });

    fake.clock.time += 5_000;
    fake.host.on(/systemctl enable --now/, {});
    oldUnitComesBack(fake, 0);
    const second = await coldMode.undo(fake.ctx, WHY);

    expect(second).toEqual({ ok: true, detail: `${OLD_UNIT} is healthy again` });
    expect(rollingBack(fake)).toHaveLength(1);
    expect(fake.swap.record.rollbackStartedAt).toBe(later(0));
    // every step is idempotent, and was simply run again
    expect(fake.host.ran(/systemctl disable --now/)).toHaveLength(2);
  });

  it("only stops the new unit when nothing served before the swap", async () => {
    const fake = failedAfterSwitch({ plan: qwenPlan({ servedNothing: true }) });

    const result = await coldMode.undo(fake.ctx, WHY);

    expect(result).toEqual({ ok: true, detail: `${NEW_UNIT} stopped; nothing served before` });
    expect(commands(fake)).toEqual([`systemctl disable --now ${NEW_UNIT}`]);
    // back to nothing: the announcement names no unit to go back to
    expect(fake.events()).toEqual([{ type: "rolling-back", stopping: NEW_UNIT, why: WHY, at: later(0) }]);
  });

  it("does not restart the old unit when the switch failed before stopping it, and still checks it serves", async () => {
    const fake = failedAfterSwitch({ switch: { startedAt: ago(5) }, host: { sudo: true } });
    fake.host.on(new RegExp(`^systemctl is-active ${OLD_UNIT.replaceAll(".", "\\.")}$`), {
      stdout: "active\n",
    });
    oldUnitComesBack(fake, 0);

    const result = await coldMode.undo(fake.ctx, "writing the unit failed");

    expect(result).toEqual({ ok: true, detail: `${OLD_UNIT} is healthy again` });
    expect(commands(fake)).toEqual([
      `sudo -n systemctl disable --now ${NEW_UNIT}`,
      // not privileged: this may be what failed
      `systemctl is-active ${OLD_UNIT}`,
      `poll ${OLD_UNIT}`,
      `pid ${OLD_UNIT}`,
    ]);
    expect(fake.host.ran(/enable --now/)).toEqual([]);
  });

  it("starts the old unit when the switch's record says nothing but the unit is not active (its stop was cut off)", async () => {
    const fake = failedAfterSwitch({ switch: { startedAt: ago(5) } });
    fake.host.on(/^systemctl is-active sglang-kimi\.service$/, { code: 3, stdout: "inactive\n" });
    oldUnitComesBack(fake, 0);

    expect(await coldMode.undo(fake.ctx, WHY)).toMatchObject({ ok: true });
    expect(fake.host.ran(/systemctl enable --now/)).toEqual([`systemctl enable --now ${OLD_UNIT}`]);
  });

  it("touches no engine: the old unit starts on the engine it ran before (the build had a directory of its own)", async () => {
    const fake = failedAfterSwitch({ record: { engine: { commit: "f".repeat(40), version: "0.5.6" } } });
    oldUnitComesBack(fake, 0);

    await coldMode.undo(fake.ctx, WHY);

    expect(commands(fake)).toEqual([
      `systemctl disable --now ${NEW_UNIT}`,
      `systemctl enable --now ${OLD_UNIT}`,
      `poll ${OLD_UNIT}`,
      `pid ${OLD_UNIT}`,
    ]);
  });

  it("returns ok:false with a rollback-failed event when the old unit does not come back", async () => {
    const fake = failedAfterSwitch();
    const crash = [
      ...loadingJournal(OLD_UNIT),
      "[2026-12-01 12:00:09 TP0] Scheduler hit an exception: Traceback (most recent call last):",
      '  File "/opt/sglang/python/sglang/srt/managers/scheduler.py", line 2968, in run_scheduler_process',
      "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
      `${OLD_UNIT}: Main process exited, code=exited, status=1/FAILURE`,
      `${OLD_UNIT}: Failed with result 'exit-code'.`,
    ];
    fake.host.on(healthPoll(OLD_UNIT), healthAnswer("failed", "000", crash));

    const result = await coldMode.undo(fake.ctx, WHY);

    const why = `${OLD_UNIT} failed: RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.`;
    expect(result).toEqual({ ok: false, detail: `${OLD_UNIT} did not come back: ${why}` });
    expect(result.unreachable).toBeUndefined();
    expect(fake.events().map((e) => e.type)).toEqual(["rolling-back", "rollback-failed"]);
    expect(fake.events()[1]).toMatchObject({ type: "rollback-failed", unit: OLD_UNIT, why });
    expect((fake.events()[1] as { journal: string[] }).journal).toContain(
      "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
    );
  });

  it("gives the old unit at least 10 minutes, or the plan's health limit when that is longer", async () => {
    const fake = failedAfterSwitch();
    fake.host.on(healthPoll(OLD_UNIT), healthAnswer("activating", "000", loadingJournal(OLD_UNIT)));

    const result = await coldMode.undo(fake.ctx, WHY);

    // the plan allows the 223 GB model 1200 s; the old unit gets as long
    expect(result).toEqual({
      ok: false,
      detail: `${OLD_UNIT} did not come back: not healthy after 20 min 1 s (limit 20 min)`,
    });
    expect(fake.clock.now() - T0).toBe(1_200_500);
    expect(fake.events().at(-1)).toMatchObject({ type: "rollback-failed", unit: OLD_UNIT });
  });

  it("gives the old unit the configured health limit (swaps.healthTimeoutSeconds) when the operator set one", async () => {
    // The operator's hosts load slowly: they allow an hour. The old model is up after 30 minutes.
    const fake = failedAfterSwitch({ settings: { healthTimeoutSeconds: 3600 } });
    fake.host.on(healthPoll(OLD_UNIT), () =>
      fake.clock.now() - T0 < 1800_000
        ? healthAnswer("activating", "000", loadingJournal(OLD_UNIT))
        : healthAnswer("active", "200", healthyJournal(OLD_UNIT)),
    );

    const result = await coldMode.undo(fake.ctx, WHY);

    // Declaring "no healthy service" at 20 min would page the channel while the old model still loads.
    expect(result).toEqual({ ok: true, detail: `${OLD_UNIT} is healthy again` });
    expect(fake.events().map((e) => e.type)).toEqual(["rolling-back"]);
  });

  it("returns ok:false (not unreachable) when the old unit cannot be enabled", async () => {
    const fake = failedAfterSwitch();
    fake.host.on(/systemctl enable --now/, {
      code: 1,
      stderr: `Failed to enable unit: Unit file ${OLD_UNIT} does not exist.\n`,
    });

    const result = await coldMode.undo(fake.ctx, WHY);

    expect(result.ok).toBe(false);
    expect(result.detail).toContain(`Unit file ${OLD_UNIT} does not exist.`);
    expect(result.unreachable).toBeUndefined();
    expect(fake.host.ran(healthPoll(OLD_UNIT))).toEqual([]);
  });

  it("sets unreachable when the host cannot be reached, before or during the health wait", async () => {
    const early = failedAfterSwitch();
    early.host.on(/systemctl disable --now/, unreachable());
    const atStart = await coldMode.undo(early.ctx, WHY);
    expect(atStart).toMatchObject({ ok: false, detail: expect.stringContaining("(HOST_UNREACHABLE)") });
    expect(atStart.unreachable).toMatchObject({ code: "HOST_UNREACHABLE" });
    expect(early.host.ran(/enable --now/)).toEqual([]);

    const late = failedAfterSwitch();
    late.host.on(healthPoll(OLD_UNIT), unreachable());
    const during = await coldMode.undo(late.ctx, WHY);
    expect(during.ok).toBe(false);
    expect(during.unreachable).toMatchObject({ code: "HOST_UNREACHABLE" });
    expect(late.events().map((e) => e.type)).toEqual(["rolling-back"]);
  });

  it("hands over (SHUTTING_DOWN) when the process stops during the old unit's health wait", async () => {
    const fake = failedAfterSwitch();
    fake.host.on(healthPoll(OLD_UNIT), () => {
      fake.abort.abort();
      return healthAnswer("activating", "000", loadingJournal(OLD_UNIT));
    });

    await expect(coldMode.undo(fake.ctx, WHY)).rejects.toMatchObject({ code: "SHUTTING_DOWN" });
  });
});
