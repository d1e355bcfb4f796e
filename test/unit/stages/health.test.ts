import { describe, expect, it } from "vitest";
import { healthStage } from "../../../jobs/swap/stages/health.ts";
import { waitHealthy } from "../../../jobs/swap/stages/wait-healthy.ts";
import type { ExecResult } from "../../../src/host/transport.ts";
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
  OOM_LINE,
  oomJournal,
  PLAN,
  servesAnswer,
  servesProbe,
  T0,
  unreachable,
} from "./late-stage-fixtures.ts";

/** A swap whose switch is done: the old unit stopped `stoppedAgo` s ago, the new one started a second later. */
function switched(options: LateOptions & { stoppedAgo?: number; newStartedAgo?: number } = {}): Fake {
  const stoppedAgo = options.stoppedAgo ?? 50;
  const newStartedAgo = options.newStartedAgo ?? stoppedAgo - 1;
  const stages = approvedRecord().stages!;
  const fake = lateContext({
    ...options,
    record: {
      step: "health",
      switch: {
        startedAt: ago(stoppedAgo + 12),
        oldMainPid: OLD_PID,
        oldStoppedAt: ago(stoppedAgo),
        newStartedAt: ago(newStartedAgo),
        done: true,
      },
      stages: {
        ...stages,
        switch: { state: "done", startedAt: ago(stoppedAgo + 12), finishedAt: ago(newStartedAgo) },
      },
      ...options.record,
    },
  });
  // by default the new unit has a process of its own and serves the plan's weights
  fake.host.on(servesProbe, servesAnswer(NEW_PID, PLAN.modelDir));
  return fake;
}

const OLD_PID = 4242;
const NEW_PID = 5151;

/** The health poll answers these, one per poll, the last one for ever after. */
function polls(fake: Fake, unit: string, answers: Partial<ExecResult>[]): { count: () => number } {
  let n = 0;
  fake.host.on(healthPoll(unit), () => answers[Math.min(n++, answers.length - 1)]!);
  return { count: () => n };
}

const loading = healthAnswer("activating", "000", loadingJournal(NEW_UNIT));
const serving = healthAnswer("active", "200", healthyJournal(NEW_UNIT));

describe("healthStage", () => {
  it("fails, for a rollback, when the healthy server is the old unit's process", async () => {
    const fake = switched();
    polls(fake, NEW_UNIT, [serving]);
    fake.host.on(servesProbe, servesAnswer(OLD_PID, PLAN.modelDir));
    expect(await healthStage(fake.ctx)).toEqual({
      fail: `${NEW_UNIT} runs the old unit's process (MainPID ${OLD_PID}): nothing new was started`,
      touched: true,
      code: "HEALTH_FAILED",
      fix: "something other than the new unit answers on port 30000: stop it (ss -ltnp shows the process), then swap again",
    });
    expect(fake.swap.record.healthyAt).toBeUndefined();
    expect(fake.events().map((e) => e.type)).not.toContain("healthy");
  });

  it("fails when the server on the port serves other weights than the new ones, or says nothing", async () => {
    const other = switched();
    polls(other, NEW_UNIT, [serving]);
    other.host.on(servesProbe, servesAnswer(NEW_PID, "/srv/models/the-old-model"));
    expect(await healthStage(other.ctx)).toMatchObject({
      fail: expect.stringContaining(
        `serves /srv/models/the-old-model, not the new weights in ${PLAN.modelDir}`,
      ),
      touched: true,
    });
    const mute = switched();
    polls(mute, NEW_UNIT, [serving]);
    mute.host.on(servesProbe, { stdout: `${NEW_PID}\n---info---\n` });
    expect(await healthStage(mute.ctx)).toMatchObject({
      fail: expect.stringContaining("does not say what it serves"),
      touched: true,
    });
    const none = switched();
    polls(none, NEW_UNIT, [serving]);
    none.host.on(servesProbe, servesAnswer(0, PLAN.modelDir));
    expect(await healthStage(none.ctx)).toMatchObject({
      fail: expect.stringContaining("has no process"),
      touched: true,
    });
  });

  it("waits for /health_generate, then records the downtime from the old unit's stop and says healthy", async () => {
    const fake = switched({ stoppedAgo: 50 });
    const poll = polls(fake, NEW_UNIT, [loading, loading, serving]);

    const result = await healthStage(fake.ctx);

    expect(result).toEqual({ next: "sanity" });
    expect(poll.count()).toBe(3);
    // two polls half a second apart on the fake clock, then healthy: 50 s + 1 s of downtime
    expect(fake.swap.record.healthyAt).toBe(later(1));
    expect(fake.swap.record.downtimeSeconds).toBe(51);
    expect(fake.swap.record.stages.health).toEqual({
      state: "done",
      startedAt: later(0),
      finishedAt: later(1),
      detail: "healthy 51 s after the old unit stopped",
    });
    expect(fake.events()).toEqual([{ type: "healthy", unit: NEW_UNIT, downtimeSeconds: 51, at: later(1) }]);
    // The poll: the unit's state, a generation through /health_generate on the loopback, the journal.
    const [command] = fake.host.ran(healthPoll(NEW_UNIT));
    expect(command).toContain(`systemctl is-active ${NEW_UNIT} || true`);
    expect(command).toContain("http://127.0.0.1:30000/health_generate");
    expect(command).toContain(`journalctl -u ${NEW_UNIT} -n 200 --no-pager -o cat`);
  });

  it("says the old unit was parked, not stopped, when the switch parked it", async () => {
    const fake = switched({
      record: {
        switch: {
          startedAt: ago(62),
          oldMainPid: OLD_PID,
          oldStoppedAt: ago(50),
          newStartedAt: ago(49),
          done: true,
          parked: { at: ago(50) },
        },
      },
    });
    polls(fake, NEW_UNIT, [loading, loading, serving]);

    expect(await healthStage(fake.ctx)).toEqual({ next: "sanity" });
    expect(fake.swap.record.downtimeSeconds).toBe(51);
    expect(fake.swap.record.stages.health.detail).toBe("healthy 51 s after the old unit was parked");
  });

  it("shows the limit on the card while it waits, and saves its progress as it goes", async () => {
    const fake = switched({ settings: { healthTimeoutSeconds: 600 } });
    const states: (string | undefined)[] = [];
    let n = 0;
    fake.host.on(healthPoll(NEW_UNIT), () => {
      states.push(fake.swap.record.stages.health.detail);
      return ++n > 40 ? serving : loading;
    });

    await healthStage(fake.ctx);

    expect(states[0]).toBe("waiting for /health_generate (limit 10 min)");
    expect(states.at(-1)).toMatch(/^loading for (\d+ min )?\d+ s \(limit 10 min\)$/);
    // 20 s of polling: the begin, then a save every 5 s (the card follows the wait)
    expect(fake.checkpoints()).toBeGreaterThanOrEqual(4);
  });

  it("fails fast when the unit enters failed, with the journal's fatal line and a health-failed event", async () => {
    const fake = switched();
    polls(fake, NEW_UNIT, [loading, healthAnswer("failed", "000", oomJournal(NEW_UNIT))]);

    const result = await healthStage(fake.ctx);

    const why = `${NEW_UNIT} failed: ${OOM_LINE}`;
    expect(result).toEqual({
      fail: why,
      touched: true,
      code: "HEALTH_FAILED",
      fix: "the model does not fit in the GPUs' memory: more GPUs (--tp) or a smaller checkpoint",
    });
    // one poll interval, not the 20 minutes of the limit
    expect(fake.clock.now() - T0).toBe(500);
    expect(fake.swap.record.stages.health).toMatchObject({
      state: "failed",
      finishedAt: later(0.5),
      detail: why,
    });
    expect(fake.swap.record.healthyAt).toBeUndefined();
    const events = fake.events();
    expect(events.map((e) => e.type)).toEqual(["health-failed"]);
    expect(events[0]).toMatchObject({ type: "health-failed", unit: NEW_UNIT, why });
    const journal = (events[0] as { journal: string[] }).journal;
    expect(journal).toContain(OOM_LINE);
    expect(journal.at(-1)).toBe(`${NEW_UNIT}: Failed with result 'exit-code'.`);
  });

  it("puts the crash's traceback, from its first line, in the health-failed event", async () => {
    const fake = switched();
    polls(fake, NEW_UNIT, [healthAnswer("failed", "000", oomJournal(NEW_UNIT))]);

    await healthStage(fake.ctx);

    // SGLang logs a scheduler's traceback behind its log prefix: the thread should show it from the top.
    const journal = (fake.events()[0] as { journal: string[] }).journal;
    expect(journal[0]).toContain("Scheduler hit an exception: Traceback (most recent call last):");
  });

  it("puts this run's crash in the health-failed event, not an earlier run's of the same unit", async () => {
    // A first attempt at this model crashed at import (a broken build); this run ran out of memory.
    const earlier = [
      `Started ${NEW_UNIT} - SGLang serving nvidia/Qwen3.5-397B-A17B-NVFP4@43da92d (modelswap).`,
      "Traceback (most recent call last):",
      '  File "<frozen runpy>", line 189, in _run_module_as_main',
      '  File "/opt/sglang/python/sglang/__init__.py", line 4, in <module>',
      "    from sglang.srt.entrypoints.engine import Engine",
      "ImportError: /opt/sglang/.venv/lib/python3.12/site-packages/sgl_kernel/sm100/common_ops.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEab",
      `${NEW_UNIT}: Main process exited, code=exited, status=1/FAILURE`,
      `${NEW_UNIT}: Failed with result 'exit-code'.`,
      `Stopped ${NEW_UNIT} - SGLang serving nvidia/Qwen3.5-397B-A17B-NVFP4@43da92d (modelswap).`,
    ];
    const fake = switched();
    polls(fake, NEW_UNIT, [healthAnswer("failed", "000", [...earlier, ...oomJournal(NEW_UNIT)])]);

    const result = await healthStage(fake.ctx);

    // The reason is this run's (the wait reads the journal since the unit's last start) …
    expect(result).toEqual({
      fail: `${NEW_UNIT} failed: ${OOM_LINE}`,
      touched: true,
      code: "HEALTH_FAILED",
      fix: expect.stringContaining("more GPUs (--tp)"),
    });
    // … and so should the journal lines the thread shows be.
    const journal = (fake.events()[0] as { journal: string[] }).journal;
    expect(journal.join("\n")).not.toContain("ImportError");
    expect(journal).toContain(OOM_LINE);
  });

  it("fails fast on a fatal line in the journal while the unit is still active", async () => {
    const sampling = "[2026-12-01 12:04:01 TP0] Detected errors during sampling! NaN in the logits.";
    const fake = switched();
    polls(fake, NEW_UNIT, [
      loading,
      loading,
      healthAnswer("active", "503", [...healthyJournal(NEW_UNIT), sampling]),
    ]);

    const result = await healthStage(fake.ctx);

    expect(result).toEqual({
      fail: `fatal line in the journal: ${sampling}`,
      touched: true,
      code: "HEALTH_FAILED",
      fix: expect.stringContaining("NaN logits mean a kernel is broken on this GPU"),
    });
    expect(fake.clock.now() - T0).toBe(1000);
    expect(fake.events()).toMatchObject([
      { type: "health-failed", unit: NEW_UNIT, why: `fatal line in the journal: ${sampling}` },
    ]);
  });

  it("does not fail on an earlier run's crash before the unit's last start", async () => {
    const fake = switched();
    const crashed = oomJournal(NEW_UNIT);
    polls(fake, NEW_UNIT, [
      healthAnswer("activating", "000", [...crashed, ...loadingJournal(NEW_UNIT)]),
      healthAnswer("active", "200", [...crashed, ...healthyJournal(NEW_UNIT)]),
    ]);

    expect(await healthStage(fake.ctx)).toEqual({ next: "sanity" });
  });

  it("fails after settings.healthTimeoutSeconds on the fake clock when the server never answers", async () => {
    const fake = switched({ newStartedAgo: 0, stoppedAgo: 1, settings: { healthTimeoutSeconds: 90 } });
    const poll = polls(fake, NEW_UNIT, [loading]);

    const result = await healthStage(fake.ctx);

    expect(result).toEqual({
      fail: "not healthy after 1 min 31 s (limit 1 min 30 s)",
      touched: true,
      code: "HEALTH_FAILED",
      fix: expect.stringContaining("swaps.healthTimeoutSeconds (this swap's limit was 1 min 30 s)"),
    });
    // polled every 500 ms from the unit's start until past the limit
    expect(fake.clock.now() - T0).toBe(90_500);
    expect(poll.count()).toBe(182);
    expect(fake.swap.record.stages.health).toMatchObject({
      state: "failed",
      startedAt: later(0),
      finishedAt: later(90.5),
      detail: "not healthy after 1 min 31 s (limit 1 min 30 s)",
    });
    expect(fake.events()).toMatchObject([
      { type: "health-failed", unit: NEW_UNIT, why: "not healthy after 1 min 31 s (limit 1 min 30 s)" },
    ]);
    expect((fake.events()[0] as { journal: string[] }).journal).toEqual(loadingJournal(NEW_UNIT));
  });

  it("waits the plan's limit (from the model's size) when the settings do not override it", async () => {
    const fake = switched({ newStartedAgo: 0, stoppedAgo: 1 });
    polls(fake, NEW_UNIT, [loading]);

    const result = await healthStage(fake.ctx);

    expect(fake.swap.record.plan!.healthTimeoutSeconds).toBe(1200);
    expect(result).toEqual({
      fail: "not healthy after 20 min 1 s (limit 20 min)",
      touched: true,
      code: "HEALTH_FAILED",
      fix: expect.stringContaining("this swap's limit was 20 min"),
    });
    expect(fake.clock.now() - T0).toBe(1_200_500);
  });

  it("resumed by another worker, keeps the unit's clock (switch.newStartedAt)", async () => {
    // The unit started 10 minutes ago; the limit is 15.
    const fake = switched({ stoppedAgo: 601, newStartedAgo: 600, settings: { healthTimeoutSeconds: 900 } });
    fake.swap.set({
      stages: {
        ...fake.swap.record.stages,
        health: { state: "running", startedAt: ago(599), detail: "loading for 9 min (limit 15 min)" },
      },
    });
    polls(fake, NEW_UNIT, [loading]);

    const result = await healthStage(fake.ctx);

    expect(result).toEqual({
      fail: "not healthy after 15 min 1 s (limit 15 min)",
      touched: true,
      code: "HEALTH_FAILED",
      fix: expect.stringContaining("this swap's limit was 15 min"),
    });
    expect(fake.clock.now() - T0).toBe(300_500);
    expect(fake.swap.record.stages.health.startedAt).toBe(ago(599));
  });

  it("hands the wait over (SHUTTING_DOWN) when the process stops, leaving the stage running", async () => {
    const fake = switched();
    let n = 0;
    fake.host.on(healthPoll(NEW_UNIT), () => {
      if (++n === 3) fake.abort.abort();
      return loading;
    });

    await expect(healthStage(fake.ctx)).rejects.toMatchObject({ code: "SHUTTING_DOWN" });

    expect(n).toBe(3);
    expect(fake.swap.record.stages.health.state).toBe("running");
    expect(fake.swap.record.healthyAt).toBeUndefined();
    expect(fake.events()).toEqual([]);
  });

  it("throws an unreachable host for a retry", async () => {
    const fake = switched();
    polls(fake, NEW_UNIT, [loading]);
    fake.host.on(healthPoll(NEW_UNIT), unreachable());

    await expect(healthStage(fake.ctx)).rejects.toMatchObject({ code: "HOST_UNREACHABLE" });
    expect(fake.swap.record.stages.health.state).toBe("running");
    expect(fake.events()).toEqual([]);
  });
});

describe("waitHealthy", () => {
  it("needs both an active unit and a 200: a 200 from a unit systemd calls activating is not healthy yet", async () => {
    const fake = switched();
    const poll = polls(fake, NEW_UNIT, [
      healthAnswer("activating", "200", loadingJournal(NEW_UNIT)),
      healthAnswer("active", "503", loadingJournal(NEW_UNIT)),
      serving,
    ]);

    expect(await waitHealthy(fake.ctx, NEW_UNIT, 60)).toEqual({ healthy: true, mainPid: 0 });
    expect(poll.count()).toBe(3);
  });

  it("polls twice a second at most, and no faster than every 200 ms", async () => {
    for (const [pollSeconds, interval] of [
      [5, 500],
      [0.3, 300],
      [0.05, 200],
    ] as const) {
      const fake = switched({ settings: { pollSeconds } });
      const times: number[] = [];
      let n = 0;
      fake.host.on(healthPoll(NEW_UNIT), () => {
        times.push(fake.clock.now());
        return ++n >= 3 ? serving : loading;
      });

      await waitHealthy(fake.ctx, NEW_UNIT, 60);

      expect(times).toEqual([T0, T0 + interval, T0 + 2 * interval]);
    }
  });

  it("measures the limit from `since`, not from its own start", async () => {
    const fake = switched();
    polls(fake, NEW_UNIT, [loading]);

    const result = await waitHealthy(fake.ctx, NEW_UNIT, 30, undefined, T0 - 29_000);

    expect(result).toMatchObject({ healthy: false, why: "not healthy after 31 s (limit 30 s)" });
    expect(fake.clock.now() - T0).toBe(1500);
  });

  it("waits for a traceback still being written, and reports its exception, not its first line", async () => {
    // journald gets a traceback line by line; a poll can land between its first line and its exception
    // (one CI run reported "fatal line in the journal: Traceback (most recent call last):" so)
    const crash = oomJournal(NEW_UNIT);
    const start = crash.findIndex((l) => l.includes("Traceback"));
    const fake = switched();
    const poll = polls(fake, NEW_UNIT, [
      healthAnswer("active", "000", crash.slice(0, start + 3)),
      healthAnswer("active", "000", crash.slice(0, start + 5)),
      healthAnswer("failed", "000", crash),
    ]);

    const result = await waitHealthy(fake.ctx, NEW_UNIT, 60);

    expect(result).toMatchObject({ healthy: false, why: `${NEW_UNIT} failed: ${OOM_LINE}` });
    expect(poll.count()).toBe(3);
  });

  it("reports an unended traceback once it has stopped growing for its grace, not for ever", async () => {
    const crash = oomJournal(NEW_UNIT);
    const start = crash.findIndex((l) => l.includes("Traceback"));
    const fake = switched();
    polls(fake, NEW_UNIT, [healthAnswer("active", "000", crash.slice(0, start + 3))]);

    const result = await waitHealthy(fake.ctx, NEW_UNIT, 600);

    expect(result).toMatchObject({
      healthy: false,
      why: expect.stringContaining("Traceback (most recent call last)"),
    });
    expect(fake.clock.now() - T0).toBeGreaterThanOrEqual(5000);
    expect(fake.clock.now() - T0).toBeLessThanOrEqual(6000);
  });

  it("ignores journalctl's '-- No entries --' and reports a unit that failed with nothing in its journal", async () => {
    const fake = switched();
    polls(fake, NEW_UNIT, [healthAnswer("failed", "000", ["-- No entries --"])]);

    expect(await waitHealthy(fake.ctx, NEW_UNIT, 60)).toEqual({
      healthy: false,
      why: `${NEW_UNIT} failed`,
      journal: [],
    });
  });
});
