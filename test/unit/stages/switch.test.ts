import { describe, expect, it } from "vitest";
import { switchStage } from "../../../jobs/swap/stages/switch.ts";
import type { SwapRecord } from "../../../src/swap/swap-record.ts";
import type { Answer, Fake } from "./fake-stage-context.ts";
import {
  ago,
  approvedRecord,
  lateContext,
  later,
  NEW_UNIT,
  NEW_UNIT_PATH,
  OLD_UNIT,
  PLAN,
  qwenPlan,
  T0,
  unreachable,
} from "./late-stage-fixtures.ts";

/** One command as the stage ran it, with what had been saved by then and what the record said. */
interface Seen {
  command: string;
  checkpoints: number;
  switch: SwapRecord["switch"];
}

/**
 * Answers every command (the answers in `script`, else exit 0) and notes, for each, how many checkpoints
 * the stage had asked for and the record's switch progress at that moment. Stopping SGLang takes a while
 * (it drains in-flight requests): `disable --now` of the old unit moves the clock 12 s, the new unit's
 * start 1 s, so the record's times can be told apart.
 */
function script(fake: Fake, answers: [RegExp, Answer][] = []): Seen[] {
  const seen: Seen[] = [];
  fake.host.on(/.*/, (command) => {
    seen.push({
      command,
      checkpoints: fake.checkpoints(),
      switch: structuredClone(fake.swap.record.switch),
    });
    if (/systemctl disable --now/.test(command)) fake.clock.time += 12_000;
    if (/systemctl enable --now/.test(command)) fake.clock.time += 1_000;
    const answer = answers.find(([pattern]) => pattern.test(command))?.[1];
    if (answer === undefined && /systemctl show -p MainPID --value /.test(command))
      return { stdout: `${OLD_PID}\n` };
    return answer ?? {};
  });
  return seen;
}

const commands = (seen: Seen[]) => seen.map((s) => s.command);

/** The old unit's process as systemd shows it when the switch begins. */
const OLD_PID = 4242;

describe("switchStage", () => {
  it("writes the unit, reloads systemd, stops and disables the old unit, then enables and starts the new one", async () => {
    const fake = lateContext();
    const seen = script(fake);

    const result = await switchStage(fake.ctx);

    expect(result).toEqual({ next: "health" });
    expect(commands(seen)).toEqual([
      "true",
      `systemctl show -p MainPID --value ${OLD_UNIT}`,
      `tee ${NEW_UNIT_PATH} > /dev/null`,
      "systemctl daemon-reload",
      `systemctl disable --now ${OLD_UNIT}`,
      `systemctl enable --now ${NEW_UNIT}`,
    ]);
    // the unit file's text goes on stdin, never on the command line
    expect(fake.host.commands[2]?.stdin).toBe(PLAN.unitText);
    expect(fake.swap.record.switch).toEqual({
      startedAt: later(0),
      oldMainPid: OLD_PID,
      stopBeganAt: later(0),
      oldStoppedAt: later(12),
      newStartedAt: later(13),
      done: true,
    });
    expect(fake.swap.record.stages.switch).toEqual({
      state: "done",
      startedAt: later(0),
      finishedAt: later(13),
      detail: `${OLD_UNIT} stopped and disabled; ${NEW_UNIT} enabled and started`,
    });
    expect(fake.events()).toEqual([
      { type: "switched", from: OLD_UNIT, stopSeconds: 12, to: NEW_UNIT, at: later(13) },
    ]);
    expect(fake.audit()).toMatchObject([
      { kind: "stage", stage: "switch", detail: expect.stringMatching(/^switch done: /) },
    ]);
  });

  it("saves that the switch began before its first change, and that the old unit stopped before starting the new one", async () => {
    const fake = lateContext();
    const seen = script(fake);

    await switchStage(fake.ctx);

    const when = (pattern: RegExp) => seen.find((s) => pattern.test(s.command))!;
    // Reaching the host changes nothing and marks nothing as begun.
    expect(when(/^true$/)).toMatchObject({ checkpoints: 0, switch: undefined });
    // Before the unit file is written, a save says the switch began (a restarted worker resumes it).
    expect(when(/tee /).checkpoints).toBeGreaterThanOrEqual(1);
    expect(when(/tee /).switch).toEqual({ startedAt: later(0), oldMainPid: OLD_PID });
    // The old unit's stop is saved before the new unit starts: a crash in between never stops it again.
    expect(when(/enable --now/).checkpoints).toBeGreaterThan(when(/disable --now/).checkpoints);
    expect(when(/enable --now/).switch).toEqual({
      startedAt: later(0),
      oldMainPid: OLD_PID,
      stopBeganAt: later(0),
      oldStoppedAt: later(12),
    });
  });

  it("runs every systemctl command and the unit write with sudo -n on a host configured with sudo", async () => {
    const fake = lateContext({ host: { sudo: true } });
    const seen = script(fake);

    expect(await switchStage(fake.ctx)).toEqual({ next: "health" });

    expect(commands(seen)).toEqual([
      "true",
      `systemctl show -p MainPID --value ${OLD_UNIT}`,
      `sudo -n tee ${NEW_UNIT_PATH} > /dev/null`,
      "sudo -n systemctl daemon-reload",
      `sudo -n systemctl disable --now ${OLD_UNIT}`,
      `sudo -n systemctl enable --now ${NEW_UNIT}`,
    ]);
  });

  it("stops nothing on a host that served nothing", async () => {
    const fake = lateContext({ plan: qwenPlan({ servedNothing: true }) });
    const seen = script(fake);

    expect(await switchStage(fake.ctx)).toEqual({ next: "health" });

    expect(fake.host.ran(/disable/)).toEqual([]);
    expect(commands(seen)).toEqual([
      "true",
      `tee ${NEW_UNIT_PATH} > /dev/null`,
      "systemctl daemon-reload",
      `systemctl enable --now ${NEW_UNIT}`,
    ]);
    // The downtime clock starts when the switch got there (nothing served, nothing was stopped).
    expect(fake.swap.record.switch).toMatchObject({
      oldStoppedAt: later(0),
      newStartedAt: later(1),
      done: true,
    });
    expect(fake.swap.record.stages.switch.state).toBe("done");
  });

  it("does not tell the card it stopped a unit on a host that served nothing", async () => {
    const fake = lateContext({ plan: qwenPlan({ servedNothing: true }) });
    script(fake);

    await switchStage(fake.ctx);

    // There was no such unit: "sglang-kimi.service stopped and disabled" would be a false statement.
    expect(fake.swap.record.stages.switch.detail).not.toContain(`${OLD_UNIT} stopped`);
    expect(fake.swap.record.stages.switch.detail).toContain(`${NEW_UNIT} enabled and started`);
  });

  it("resumed after a crash with the old unit already stopped, does not stop it again", async () => {
    const fake = lateContext({
      record: {
        switch: { startedAt: ago(40), oldStoppedAt: ago(30) },
        stages: {
          ...approvedRecord().stages!,
          switch: { state: "running", startedAt: ago(40), detail: `${OLD_UNIT} → ${NEW_UNIT}` },
        },
      },
    });
    const seen = script(fake);

    expect(await switchStage(fake.ctx)).toEqual({ next: "health" });

    expect(commands(seen)).toEqual([
      `tee ${NEW_UNIT_PATH} > /dev/null`,
      "systemctl daemon-reload",
      `systemctl enable --now ${NEW_UNIT}`,
    ]);
    // The record keeps the first run's times: the downtime is measured from the real stop.
    expect(fake.swap.record.switch).toEqual({
      startedAt: ago(40),
      oldStoppedAt: ago(30),
      newStartedAt: later(1),
      done: true,
    });
    expect(fake.swap.record.stages.switch).toMatchObject({
      state: "done",
      startedAt: ago(40),
      finishedAt: later(1),
    });
  });

  it("resumed after a crash that followed the new unit's start, keeps the unit's start time", async () => {
    const fake = lateContext({
      record: { switch: { startedAt: ago(40), oldStoppedAt: ago(30), newStartedAt: ago(29) } },
    });
    script(fake);

    await switchStage(fake.ctx);

    expect(fake.host.ran(/disable/)).toEqual([]);
    expect(fake.swap.record.switch?.newStartedAt).toBe(ago(29));
  });

  it("fails with touched:true when a command is refused, and starts nothing after it", async () => {
    const fake = lateContext({ host: { sudo: true } });
    const seen = script(fake, [[/tee /, { code: 1, stderr: "sudo: a password is required\n" }]]);

    const result = await switchStage(fake.ctx);

    expect(result).toMatchObject({
      fail: expect.stringContaining("sudo: a password is required"),
      touched: true,
    });
    expect(result).toMatchObject({ fail: expect.stringContaining(`writing ${NEW_UNIT}`) });
    expect(commands(seen)).toEqual([
      "true",
      `systemctl show -p MainPID --value ${OLD_UNIT}`,
      `sudo -n tee ${NEW_UNIT_PATH} > /dev/null`,
    ]);
    // The old unit was never stopped: the rollback finds it serving.
    expect(fake.swap.record.switch).toEqual({ startedAt: later(0), oldMainPid: OLD_PID });
    expect(fake.swap.record.stages.switch).toMatchObject({
      state: "failed",
      finishedAt: later(0),
      detail: expect.stringContaining("sudo: a password is required"),
    });
    expect(fake.events()).toEqual([]);
  });

  it("fails with touched:true when the new unit does not start, the old one being stopped", async () => {
    const fake = lateContext();
    script(fake, [
      [
        /enable --now/,
        {
          code: 1,
          stderr: `Job for ${NEW_UNIT} failed because the control process exited with error code.\nSee "systemctl status ${NEW_UNIT}" and "journalctl -xeu ${NEW_UNIT}" for details.\n`,
        },
      ],
    ]);

    const result = await switchStage(fake.ctx);

    expect(result).toMatchObject({ fail: expect.stringContaining(`starting ${NEW_UNIT}`), touched: true });
    expect(fake.swap.record.switch).toEqual({
      startedAt: later(0),
      oldMainPid: OLD_PID,
      stopBeganAt: later(0),
      oldStoppedAt: later(12),
    });
    expect(fake.swap.record.stages.switch.state).toBe("failed");
    expect(fake.events().map((e) => e.type)).not.toContain("switched");
  });

  it("throws an unreachable host for a retry before marking anything begun", async () => {
    const fake = lateContext();
    script(fake, [[/^true$/, unreachable()]]);

    await expect(switchStage(fake.ctx)).rejects.toMatchObject({ code: "HOST_UNREACHABLE" });

    expect(fake.host.commands.map((c) => c.text)).toEqual(["true"]);
    expect(fake.swap.record.switch).toBeUndefined();
    expect(fake.swap.record.stages.switch.state).toBe("pending");
    expect(fake.checkpoints()).toBe(0);
  });

  it("throws an unreachable host mid-switch for a retry, which finishes the same switch without stopping the old unit twice", async () => {
    const fake = lateContext();
    script(fake, [[/enable --now/, unreachable()]]);

    await expect(switchStage(fake.ctx)).rejects.toMatchObject({ code: "HOST_UNREACHABLE" });
    // not failed: the step is tried again
    expect(fake.swap.record.stages.switch.state).toBe("running");
    expect(fake.swap.record.switch).toEqual({
      startedAt: later(0),
      oldMainPid: OLD_PID,
      stopBeganAt: later(0),
      oldStoppedAt: later(12),
    });

    script(fake); // the host is back
    expect(await switchStage(fake.ctx)).toEqual({ next: "health" });

    expect(fake.host.ran(/systemctl disable --now/)).toHaveLength(1);
    expect(fake.host.ran(/systemctl enable --now/)).toHaveLength(2);
    expect(fake.swap.record.switch).toMatchObject({
      startedAt: later(0),
      oldStoppedAt: later(12),
      done: true,
    });
    expect(fake.events().filter((e) => e.type === "switched")).toHaveLength(1);
    expect(Date.parse(fake.swap.record.switch!.newStartedAt!)).toBeGreaterThan(T0);
  });
});
