import { describe, expect, it } from "vitest";
import { taskDir } from "../../../jobs/swap/stages/download-task.ts";
import { prepareStage, stopTasks } from "../../../jobs/swap/stages/prepare.ts";
import type { Decision } from "../../../src/swap/swap-record.ts";
import type { Fake } from "./fake-stage-context.ts";
import { countingStarts, eventsOf, finishBuild, plannedSwap, SERVING_CHANGES } from "./stage-fixtures.ts";

const downloadDir = (fake: Fake) => taskDir("/srv/models", fake.swap.record.id, "download");
const buildDir = (fake: Fake) => taskDir("/srv/models", fake.swap.record.id, "build");

function decide(fake: Fake, approved: boolean, at = "2026-12-01T12:01:00.000Z"): Decision {
  const planHash = fake.swap.record.planHash!;
  const decision: Decision = { approved, by: "U0BOB00001", at, planHash, via: "button" };
  fake.decisions[planHash] = decision;
  return decision;
}

function downloaded(fake: Fake): void {
  fake.host.status.set(downloadDir(fake), {
    state: "exited",
    exitCode: 0,
    logTail: ["modelswap: verified 17 files"],
  });
}

/** A planned swap whose prepare step has looked once: download and build started, approval asked. */
async function preparing(options: Parameters<typeof plannedSwap>[0] = {}) {
  const fake = await plannedSwap(options);
  const counted = countingStarts(fake);
  expect(await prepareStage(counted.ctx)).toEqual({ wait: counted.ctx.settings.pollSeconds * 1000 });
  return { fake, ...counted };
}

/** Commands that remove files on the host: none may run here (downloaded files are kept). */
const DELETIONS = /\brm\b|-delete\b/;

describe("prepareStage", () => {
  it("starts the download and the engine build together, once, and parks until a decision", async () => {
    const { fake, ctx, starts } = await preparing({ settings: { pollSeconds: 5 } });

    expect(starts.map((s) => s.dir)).toEqual([downloadDir(fake), buildDir(fake)]);
    expect(fake.swap.record.stages.download.state).toBe("running");
    expect(fake.swap.record.stages.build.state).toBe("running");
    expect(fake.swap.record.stages.approval.state).toBe("running");

    expect(await prepareStage(ctx)).toEqual({ wait: 5000 });
    expect(starts).toHaveLength(2);
    // no host-side wait while nobody approved: the decision wakes the job
    expect(fake.host.ran(/seq 1/)).toEqual([]);
    expect(fake.host.stopped).toEqual([]);
    expect(fake.host.ran(SERVING_CHANGES)).toEqual([]);
  });

  it("goes on to the switch once approved, downloaded and built", async () => {
    const { fake, ctx } = await preparing();
    const decision = decide(fake, true);
    downloaded(fake);
    finishBuild(fake.host, buildDir(fake));

    expect(await prepareStage(ctx)).toEqual({ next: "switch" });

    const { record } = fake.swap;
    expect(record.decision).toEqual(decision);
    expect(record.stages.download.state).toBe("done");
    expect(record.stages.build.state).toBe("done");
    expect(record.stages.approval).toMatchObject({ state: "done", detail: "" });
    expect(eventsOf(fake, "downloaded")).toHaveLength(1);
    expect(eventsOf(fake, "built")).toHaveLength(1);
    // nothing is stopped, nothing on the serving side is touched yet: the switch does that
    expect(fake.host.stopped).toEqual([]);
    expect(fake.host.ran(SERVING_CHANGES)).toEqual([]);
    expect(fake.host.ran(DELETIONS)).toEqual([]);
  });

  it("approved but still downloading: waits on the host for the download's exit file, then looks again at once", async () => {
    const { fake, ctx } = await preparing({ settings: { pollSeconds: 2 } });
    decide(fake, true);
    finishBuild(fake.host, buildDir(fake));
    fake.host.on(/^du -sb/, { stdout: "1000000000\n" });

    expect(await prepareStage(ctx)).toEqual({ wait: 0 });

    expect(fake.swap.record.stages.approval).toMatchObject({
      state: "done",
      detail: "waiting for the download",
    });
    expect(fake.swap.record.decision?.approved).toBe(true);
    expect(fake.host.ran(/seq 1/)).toEqual([
      `for i in $(seq 1 20); do { [ -f ${downloadDir(fake)}/exit ]; } && break; sleep 0.1; done; true`,
    ]);

    downloaded(fake);
    expect(await prepareStage(ctx)).toEqual({ next: "switch" });
  });

  it("approved but still building: waits for the build's exit file only", async () => {
    const { fake, ctx } = await preparing();
    decide(fake, true);
    downloaded(fake);

    expect(await prepareStage(ctx)).toEqual({ wait: 0 });
    expect(fake.swap.record.stages.approval.detail).toBe("waiting for the engine build");
    const waits = fake.host.ran(/seq 1/);
    expect(waits).toHaveLength(1);
    expect(waits[0]).toContain(`[ -f ${buildDir(fake)}/exit ]`);
    expect(waits[0]).not.toContain(downloadDir(fake));
  });

  it("rejected: ends rejected, both tasks stopped, the downloaded files kept", async () => {
    const { fake, ctx } = await preparing();
    const decision = decide(fake, false);

    expect(await prepareStage(ctx)).toEqual({ end: "rejected", reason: "downloaded files are kept" });

    const { record } = fake.swap;
    expect(record.decision).toEqual(decision);
    expect(record.stages.approval).toMatchObject({ state: "failed", detail: "" });
    expect(fake.host.stopped).toEqual([downloadDir(fake), buildDir(fake)]);
    expect(record.stages.download).toMatchObject({ state: "skipped", detail: "stopped" });
    expect(record.stages.build).toMatchObject({ state: "skipped", detail: "stopped" });
    expect(eventsOf(fake, "approval-closed")).toEqual([]);
    expect(fake.host.ran(DELETIONS)).toEqual([]);
    expect(fake.host.ran(SERVING_CHANGES)).toEqual([]);
  });

  it("a rejection also ends a swap whose download and build are done", async () => {
    const { fake, ctx } = await preparing();
    downloaded(fake);
    finishBuild(fake.host, buildDir(fake));
    decide(fake, false);

    expect(await prepareStage(ctx)).toEqual({ end: "rejected", reason: "downloaded files are kept" });
    expect(fake.swap.record.stages.download.state).toBe("done");
    expect(fake.swap.record.stages.build.state).toBe("done");
  });

  it("expired: ends expired once the clock passes the window, with an `approval-closed` event", async () => {
    const { fake, ctx } = await preparing({ settings: { approvalTtlMinutes: 60 } });
    const { planHash, approval } = fake.swap.record;
    expect(approval?.expiresAt).toBe("2026-12-01T13:00:00.000Z");

    // at the very end of the window it still waits
    fake.clock.time = Date.parse(approval!.expiresAt);
    expect(await prepareStage(ctx)).toEqual({ wait: 1000 });
    expect(fake.host.stopped).toEqual([]);

    fake.clock.time += 1;
    expect(await prepareStage(ctx)).toEqual({
      end: "expired",
      reason: "no approval within 60 min; downloaded files are kept",
    });

    const { record } = fake.swap;
    expect(record.stages.approval).toMatchObject({ state: "failed", detail: "nobody approved in time" });
    expect(eventsOf(fake, "approval-closed")).toEqual([
      { type: "approval-closed", planHash, why: "expired", at: "2026-12-01T13:00:00.001Z" },
    ]);
    expect(fake.host.stopped).toEqual([downloadDir(fake), buildDir(fake)]);
    expect(record.stages.download).toMatchObject({ state: "skipped", detail: "stopped" });
    expect(record.decision).toBeUndefined();
    expect(fake.host.ran(DELETIONS)).toEqual([]);
  });

  it("still waiting: parks for pollSeconds, nothing stopped, nothing decided", async () => {
    const { fake, ctx } = await preparing({ settings: { pollSeconds: 15 } });
    fake.clock.time += 3 * 60 * 60_000;
    downloaded(fake);
    finishBuild(fake.host, buildDir(fake));

    expect(await prepareStage(ctx)).toEqual({ wait: 15_000 });

    expect(fake.swap.record.stages.approval.state).toBe("running");
    expect(fake.swap.record.decision).toBeUndefined();
    expect(fake.host.stopped).toEqual([]);
    expect(eventsOf(fake, "approval-closed")).toEqual([]);
  });

  it("a download that fails stops the build too and fails the swap, nothing touched", async () => {
    const { fake, ctx } = await preparing({ settings: { downloadRetries: 0 } });
    decide(fake, true);
    fake.host.status.set(downloadDir(fake), {
      state: "exited",
      exitCode: 2,
      logTail: ["Repository Not Found"],
    });

    expect(await prepareStage(ctx)).toEqual({
      fail: "the download failed (Repository Not Found)",
      touched: false,
    });

    expect(fake.host.stopped).toEqual([downloadDir(fake), buildDir(fake)]);
    expect(fake.swap.record.stages.download.state).toBe("failed");
    expect(fake.swap.record.stages.build).toMatchObject({ state: "skipped", detail: "stopped" });
    expect(eventsOf(fake, "download-failed")).toHaveLength(1);
  });

  it("a build that fails stops the download and fails the swap, even when approved", async () => {
    const { fake, ctx } = await preparing();
    decide(fake, true);
    finishBuild(fake.host, buildDir(fake), { exitCode: 1 });

    expect(await prepareStage(ctx)).toEqual({
      fail: "the engine build failed (ERROR: pip install failed)",
      touched: false,
    });
    expect(fake.host.stopped).toEqual([downloadDir(fake), buildDir(fake)]);
    expect(fake.swap.record.stages.download).toMatchObject({ state: "skipped", detail: "stopped" });
    expect(fake.swap.record.stages.build.state).toBe("failed");
    expect(fake.host.ran(SERVING_CHANGES)).toEqual([]);
  });
});

describe("stopTasks", () => {
  it("stops the download and build tasks; a running stage becomes skipped, a done one stays done", async () => {
    const { fake } = await preparing();
    fake.swap.stage("build", "done", "commit 1a2b3c4");

    await stopTasks(fake.ctx);

    expect(fake.host.stopped).toEqual([downloadDir(fake), buildDir(fake)]);
    expect(fake.swap.record.stages.download).toMatchObject({ state: "skipped", detail: "stopped" });
    expect(fake.swap.record.stages.build).toMatchObject({ state: "done", detail: "commit 1a2b3c4" });
  });

  it("stops nothing when no task was started", async () => {
    const fake = await plannedSwap();
    await stopTasks(fake.ctx);
    expect(fake.host.stopped).toEqual([]);
    expect(fake.swap.record.stages.download.state).toBe("pending");
  });

  it("goes on when a stop fails: the other task is still stopped", async () => {
    const { fake } = await preparing();
    const stopped: string[] = [];
    const host = {
      ...fake.ctx.host,
      stopTask: async (dir: string) => {
        if (dir === downloadDir(fake)) throw new Error("gpu-1: connection lost");
        stopped.push(dir);
      },
    };

    await expect(stopTasks({ swap: fake.swap, host, log: fake.ctx.log })).resolves.toBeUndefined();
    expect(stopped).toEqual([buildDir(fake)]);
    expect(fake.swap.record.stages.download.state).toBe("skipped");
    // the card does not say a task stopped that may still run
    expect(fake.swap.record.stages.download.detail).toBe("still running on the host: gpu-1: connection lost");
    expect(fake.swap.record.stages.build.detail).toBe("stopped");
  });
});
