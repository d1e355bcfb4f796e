import { describe, expect, it } from "vitest";
import { coldMode } from "../../../jobs/swap/modes/cold.ts";
import { parkOld } from "../../../jobs/swap/stages/park.ts";
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
  NEW_UNIT,
  nanAnswer,
  OLD_UNIT,
  PLAN,
  saneAnswer,
} from "./late-stage-fixtures.ts";

/*
 * A parked old unit (swaps.sleepMode; here SGLang's memory saver) on the way back: the rollback resumes
 * it, and it answers its sanity prompts before it counts as back (a CPU backup has come back corrupted:
 * torch_memory_saver#71); one that fails, or whose wake a dead worker had already sent, is reloaded from
 * disk. And the park itself: a release a dead worker had sent is not sent again, and a release nvidia-smi
 * does not see is no park.
 */

const WHY = `${NEW_UNIT} failed its sanity check: NaN`;
const GENERATE = /\/generate$/;
const RESUME = /resume_memory_occupation/;
const RELEASE = /release_memory_occupation/;

/** A swap whose new unit failed after the old one was parked (or as `parked` says). */
function failedAfterPark(
  parked: NonNullable<NonNullable<SwapRecord["switch"]>["parked"]> = { at: ago(120) },
  settings: LateOptions["settings"] = {},
): Fake {
  const stages = approvedRecord().stages!;
  return lateContext({
    settings,
    record: {
      step: "rollback",
      reason: WHY,
      switch: {
        startedAt: ago(130),
        stopBeganAt: ago(121),
        parkBeganAt: ago(121),
        oldStoppedAt: ago(120),
        newStartedAt: ago(119),
        done: true,
        parked,
      },
      stages: {
        ...stages,
        switch: { state: "done", startedAt: ago(130), finishedAt: ago(119) },
        sanity: { state: "failed", startedAt: ago(10), finishedAt: ago(1), detail: WHY },
      },
    },
  });
}

/** The commands run, in short: health polls, process reads, sanity prompts, resume and release. */
function commands(fake: Fake): string[] {
  return fake.host.commands.map((c) => {
    if (/^\s*systemctl is-active (\S+) \|\| true/.test(c.text)) return "poll";
    if (/^systemctl show -p MainPID --value/.test(c.text)) return "pid";
    if (GENERATE.test(c.text)) return "sanity prompt";
    if (RESUME.test(c.text)) return "resume";
    if (RELEASE.test(c.text)) return "release";
    return c.text;
  });
}

const unparked = (fake: Fake) => fake.events().filter((e) => e.type === "unparked");

describe("a rollback to a parked unit", () => {
  it("resumes it, asks it the sanity prompts, and only then says it is back", async () => {
    const fake = failedAfterPark();
    fake.host.on(RESUME, { stdout: "200\n" });
    fake.host.on(healthPoll(OLD_UNIT), healthAnswer("active", "200", healthyJournal(OLD_UNIT)));
    fake.host.on(GENERATE, saneAnswer);

    const result = await coldMode.undo(fake.ctx, WHY);

    expect(result).toEqual({ ok: true, detail: `${OLD_UNIT} is healthy again` });
    const ran = commands(fake);
    expect(ran.slice(0, 3)).toEqual([`systemctl disable --now ${NEW_UNIT}`, "resume", "poll"]);
    expect(ran.filter((c) => c === "sanity prompt").length).toBeGreaterThanOrEqual(3);
    // resumed, never restarted
    expect(fake.host.ran(/systemctl (enable|disable) --now sglang-kimi/)).toEqual([]);
    expect(unparked(fake)).toEqual([
      expect.objectContaining({ unit: OLD_UNIT, how: "woken", seconds: expect.any(Number) }),
    ]);
    expect(fake.swap.record.switch?.parked).toMatchObject({ sane: true, wakeBeganAt: expect.any(String) });
  });

  it("reloads from disk a resumed model that answers NaN, and waits for its health again", async () => {
    const fake = failedAfterPark();
    fake.host.on(RESUME, { stdout: "200\n" });
    fake.host.on(healthPoll(OLD_UNIT), healthAnswer("active", "200", healthyJournal(OLD_UNIT)));
    fake.host.on(GENERATE, nanAnswer);

    const result = await coldMode.undo(fake.ctx, WHY);

    expect(result.ok).toBe(true);
    const ran = commands(fake);
    const reload = ran.indexOf(`systemctl disable --now ${OLD_UNIT}`);
    expect(reload).toBeGreaterThan(ran.lastIndexOf("sanity prompt") - 1);
    expect(ran.slice(reload, reload + 3)).toEqual([
      `systemctl disable --now ${OLD_UNIT}`,
      `systemctl enable --now ${OLD_UNIT}`,
      "poll",
    ]);
    expect(unparked(fake)).toEqual([
      expect.objectContaining({
        unit: OLD_UNIT,
        how: "reloaded",
        why: expect.stringMatching(/^it woke, but its sanity check failed: .*NaN/),
      }),
    ]);
    expect(fake.swap.record.switch?.parked?.reloadedAt).toBeDefined();
  });

  it("does not send again a wake a dead worker had sent: it reloads the unit from disk", async () => {
    const fake = failedAfterPark({ at: ago(120), wakeBeganAt: ago(5) });
    fake.host.on(healthPoll(OLD_UNIT), healthAnswer("active", "200", healthyJournal(OLD_UNIT)));
    fake.host.on(GENERATE, saneAnswer);

    const result = await coldMode.undo(fake.ctx, WHY);

    expect(result.ok).toBe(true);
    expect(fake.host.ran(RESUME)).toEqual([]);
    expect(fake.host.ran(/systemctl (enable|disable) --now sglang-kimi/)).toEqual([
      `systemctl disable --now ${OLD_UNIT}`,
      `systemctl enable --now ${OLD_UNIT}`,
    ]);
    expect(unparked(fake)).toEqual([
      expect.objectContaining({
        how: "reloaded",
        why: expect.stringMatching(/worker that was waking it stopped before the answer was recorded/),
      }),
    ]);
    // reloaded from disk: no sanity prompts asked of it here (a cold rollback's way)
    expect(fake.host.ran(GENERATE)).toEqual([]);
  });

  it("a wake that does not answer 200 reloads the unit", async () => {
    const fake = failedAfterPark();
    fake.host.on(RESUME, { stdout: "000\n", code: 7 });
    fake.host.on(healthPoll(OLD_UNIT), healthAnswer("active", "200", healthyJournal(OLD_UNIT)));

    expect((await coldMode.undo(fake.ctx, WHY)).ok).toBe(true);
    expect(unparked(fake)).toEqual([
      expect.objectContaining({ how: "reloaded", why: "it did not wake: nothing answered (curl exit 7)" }),
    ]);
  });
});

describe("a rollback whose park or wake went wrong", () => {
  it("a park begun and never recorded: the old unit is stopped (no second release) and started again", async () => {
    // the switch died inside the park: the release may have reached the engine, nothing recorded it
    const stages = approvedRecord().stages!;
    const fake = lateContext({
      record: {
        step: "rollback",
        reason: WHY,
        switch: { startedAt: ago(130), stopBeganAt: ago(121), parkBeganAt: ago(121) },
        stages: { ...stages, switch: { state: "failed", startedAt: ago(130), finishedAt: ago(119) } },
      },
    });
    fake.host.on(/systemctl is-active sglang-kimi\.service$/, { stdout: "active\n" });
    fake.host.on(healthPoll(OLD_UNIT), healthAnswer("active", "200", healthyJournal(OLD_UNIT)));

    const result = await coldMode.undo(fake.ctx, WHY);

    expect(result).toEqual({ ok: true, detail: `${OLD_UNIT} is healthy again` });
    expect(fake.host.ran(RELEASE)).toEqual([]);
    expect(fake.host.ran(RESUME)).toEqual([]);
    // it was active, but its memory may be released: stopped, then started from disk, never trusted as is
    expect(fake.host.ran(/systemctl (enable|disable) --now sglang-kimi/)).toEqual([
      `systemctl disable --now ${OLD_UNIT}`,
      `systemctl enable --now ${OLD_UNIT}`,
    ]);
    expect(fake.events().find((e) => e.type === "parked")).toMatchObject({
      failed: expect.stringMatching(/stopped before the answer was recorded/),
    });
  });

  it("a woken unit that never answers its health probe is reloaded from disk, once", async () => {
    const fake = failedAfterPark(undefined, { healthTimeoutSeconds: 5 });
    fake.host.on(RESUME, { stdout: "200\n" });
    let polls = 0;
    // unhealthy until the reload has started it again
    fake.host.on(healthPoll(OLD_UNIT), () => {
      if (fake.host.ran(/systemctl enable --now sglang-kimi/).length === 0)
        return healthAnswer("active", "503", healthyJournal(OLD_UNIT));
      polls++;
      return healthAnswer("active", "200", healthyJournal(OLD_UNIT));
    });
    fake.host.on(GENERATE, saneAnswer);

    const result = await coldMode.undo(fake.ctx, WHY);

    expect(result).toEqual({ ok: true, detail: `${OLD_UNIT} is healthy again` });
    expect(polls).toBeGreaterThan(0);
    expect(unparked(fake)).toEqual([
      expect.objectContaining({
        how: "reloaded",
        why: expect.stringMatching(/^it woke, but did not answer its health probe/),
      }),
    ]);
  });

  it("a reload whose stop fails is no reload: the rollback fails and says so, the failed model not trusted", async () => {
    const fake = failedAfterPark();
    fake.host.on(RESUME, { stdout: "200\n" });
    fake.host.on(healthPoll(OLD_UNIT), healthAnswer("active", "200", healthyJournal(OLD_UNIT)));
    fake.host.on(GENERATE, nanAnswer);
    fake.host.on(/systemctl disable --now sglang-kimi/, {
      code: 1,
      stderr: "Failed to stop: Access denied\n",
    });

    const result = await coldMode.undo(fake.ctx, WHY);

    expect(result.ok).toBe(false);
    expect(result.detail).toMatch(/stopping sglang-kimi\.service/);
    expect(fake.host.ran(/systemctl enable --now sglang-kimi/)).toEqual([]);
    expect(fake.swap.record.switch?.parked?.reloadedAt).toBeUndefined();
  });
});

/** nvidia-smi --query-gpu's lines for the plan's GPUs, each holding `usedMiB`. */
function gpuQuery(usedMiB: number): { stdout: string } {
  const lines = PLAN.host.gpus.map((g) =>
    [
      g.index,
      g.name,
      g.uuid,
      g.memoryTotalMiB,
      usedMiB,
      g.memoryTotalMiB - usedMiB,
      0,
      40,
      80,
      `${g.computeCapability.major}.${g.computeCapability.minor}`,
      g.driverVersion,
    ].join(", "),
  );
  return { stdout: `${lines.join("\n")}\n` };
}

/** A switch that parks the old unit: the record as the switch stage has it when it stops the old unit. */
function parking(switchState: Partial<NonNullable<SwapRecord["switch"]>> = {}): Fake {
  return lateContext({
    record: { step: "switch", switch: { startedAt: ago(10), stopBeganAt: ago(1), ...switchState } },
  });
}

describe("parking the old unit", () => {
  it("releases it once, and gives what nvidia-smi then shows its GPUs holding", async () => {
    const fake = parking();
    fake.host.on(RELEASE, { stdout: "200\n" });
    fake.host.on(/nvidia-smi --query-gpu/, gpuQuery(940));

    await parkOld(fake.ctx);

    expect(fake.host.ran(RELEASE)).toHaveLength(1);
    expect(fake.host.ran(/systemctl disable --now/)).toEqual([]);
    const parked = fake.events().find((e) => e.type === "parked");
    expect(parked).toMatchObject({ unit: OLD_UNIT, keptGiB: 940 / 1024 });
    expect(parked).not.toHaveProperty("failed");
    expect(fake.swap.record.switch?.parkBeganAt).toBeDefined();
  });

  it("stops it instead when nvidia-smi still sees its memory held after the release answered", async () => {
    const fake = parking();
    fake.host.on(RELEASE, { stdout: "200\n" });
    fake.host.on(/nvidia-smi --query-gpu/, gpuQuery(80_000));

    await parkOld(fake.ctx);

    expect(fake.host.ran(/systemctl disable --now/)).toEqual([`systemctl disable --now ${OLD_UNIT}`]);
    expect(fake.events().find((e) => e.type === "parked")).toMatchObject({
      failed:
        "one of its GPUs still held 78.1 GiB 30 s after the release (nvidia-smi), more than the new unit's plan leaves it",
    });
    expect(fake.swap.record.switch?.parked?.failed).toBeDefined();
  });

  it("does not send again a release a dead worker had sent: it stops the unit", async () => {
    const fake = parking({ parkBeganAt: ago(1) });

    await parkOld(fake.ctx);

    expect(fake.host.ran(RELEASE)).toEqual([]);
    expect(fake.host.ran(/systemctl disable --now/)).toEqual([`systemctl disable --now ${OLD_UNIT}`]);
    expect(fake.events().find((e) => e.type === "parked")).toMatchObject({
      failed: expect.stringMatching(/worker that was parking it stopped before the answer was recorded/),
    });
  });

  it("stops it when the engine says why it would not park (requests that never finished)", async () => {
    const fake = parking();
    fake.host.on(RELEASE, { stdout: "requests still running after 30 s\n" });

    await parkOld(fake.ctx);

    expect(fake.events().find((e) => e.type === "parked")).toMatchObject({
      failed: "the memory saver did not park it: requests still running after 30 s",
    });
    expect(fake.host.ran(/systemctl disable --now/)).toHaveLength(1);
  });
});
