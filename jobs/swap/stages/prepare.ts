import { verdict } from "../../../src/approval/gate.ts";
import { describeError } from "../../../src/errors.ts";
import { sh } from "../../../src/host/shell-quote.ts";
import type { StageContext, StepResult } from "../../../src/swap/stage-context.ts";
import { baselineStep } from "./baseline.ts";
import { buildStep, waitsForApproval } from "./build.ts";
import { downloadStep } from "./download.ts";
import { taskDir } from "./download-task.ts";

/**
 * Stages 4a, 4b and 6 together: the download and the engine build run detached and in parallel while an
 * approver decides. Each run of this step looks once at all three and either goes on to the switch
 * (approved, downloaded, built), ends the swap (rejected, expired, failed), or parks the job until the
 * next look. Nothing on the serving side is touched here.
 */
export async function prepareStage(ctx: StageContext): Promise<StepResult> {
  const { swap } = ctx;
  const failure = (await downloadStep(ctx)) ?? (await buildStep(ctx));
  if (failure !== undefined) {
    await stopTasks(ctx);
    return failure;
  }

  // while the tasks run: the outgoing model's numbers, for a host that has none to compare with
  await baselineStep(ctx);
  let decided = await verdict(ctx);
  if (decided.kind === "approved" && waitsForApproval(ctx)) {
    // the approval lets the unlisted engine ref be fetched and built now, not a look later
    swap.set({ decision: decided.decision });
    const buildFailure = await buildStep(ctx);
    if (buildFailure !== undefined) {
      await stopTasks(ctx);
      return buildFailure;
    }
    decided = await verdict(ctx);
  }
  if (decided.kind === "rejected") {
    swap.set({ decision: decided.decision });
    swap.stage("approval", "failed", ""); // the card says "rejected by …" from the decision
    await stopTasks(ctx);
    return { end: "rejected", reason: "downloaded files are kept" };
  }
  if (decided.kind === "expired") {
    swap.stage("approval", "failed", "nobody approved in time");
    await stopTasks(ctx);
    ctx.emit({ type: "approval-closed", planHash: swap.record.planHash!, why: "expired" });
    return {
      end: "expired",
      reason: `no approval within ${ctx.settings.approvalTtlMinutes} min; downloaded files are kept`,
    };
  }
  if (decided.kind === "approved" && swap.record.decision?.at !== decided.decision.at) {
    swap.set({ decision: decided.decision });
  }

  const ready = (state: string) => state === "done" || state === "skipped";
  const downloaded = ready(swap.record.stages.download.state);
  const built = ready(swap.record.stages.build.state);
  const approved = swap.record.decision?.approved === true;
  if (approved && downloaded && built) {
    swap.stage("approval", "done", ""); // the card says "approved by …" from the decision
    return { next: "switch" };
  }
  if (approved) {
    const waiting = [downloaded ? undefined : "download", built ? undefined : "engine build"].filter(Boolean);
    swap.stage("approval", "done", `waiting for the ${waiting.join(" and ")}`);
  }
  const pollMs = ctx.settings.pollSeconds * 1000;
  if (!approved) return { wait: pollMs }; // a decision wakes the job itself
  // Approved: only the tasks hold the switch back, and each second of a late look is a second added to
  // the swap. Wait on the host for a task's exit file (up to pollSeconds), then look again at once.
  const running = [downloaded ? undefined : "download", built ? undefined : "build"]
    .filter((t): t is "download" | "build" => t !== undefined)
    .map((t) => `${taskDir(ctx.host.config.modelsDir, swap.record.id, t)}/exit`);
  if (running.length === 0) return { wait: 0 };
  const anyExit = running.map((file) => sh`[ -f ${file} ]`).reduce((a, b) => sh`${a} || ${b}`);
  const rounds = Math.max(1, Math.round(pollMs / 100));
  await ctx.host.exec(sh`for i in $(seq 1 ${rounds}); do { ${anyExit}; } && break; sleep 0.1; done; true`, {
    timeoutMs: pollMs + 10_000,
  });
  return { wait: 0 };
}

/**
 * Stops the detached download and build; their files stay on the host. A task that could not be stopped
 * is not said to be: its stage reads "still running on the host" with why, and the log says so.
 */
export async function stopTasks(ctx: Pick<StageContext, "swap" | "host" | "log">): Promise<void> {
  const { swap, host } = ctx;
  for (const name of ["download", "build"] as const) {
    const task = swap.record.tasks[name];
    let failed: string | undefined;
    if (task !== undefined)
      await host.stopTask(task.dir).catch((error: unknown) => {
        failed = error instanceof Error ? error.message : String(error);
        ctx.log.warn({ task: task.dir, err: describeError(error) }, `the ${name} could not be stopped`);
      });
    if (swap.record.stages[name].state === "running")
      swap.stage(name, "skipped", failed === undefined ? "stopped" : `still running on the host: ${failed}`);
  }
}
