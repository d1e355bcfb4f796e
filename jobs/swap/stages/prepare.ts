import {
  detachedStatus,
  readTaskFile,
  startDetached,
  stopDetached,
} from "../../../src/host/detached-task.ts";
import { type ShellCommand, sh } from "../../../src/host/shell-quote.ts";
import { formatGB } from "../../../src/plan/byte-units.ts";
import { applyFlagSpellings, parseHelpFlags } from "../../../src/plan/flag-spellings.ts";
import { renderPlan } from "../../../src/reporter/plan-message.ts";
import { formatSeconds } from "../../../src/reporter/swap-card.ts";
import type { StepResult } from "../step-result.ts";
import type { StageContext } from "../swap-context.ts";
import { buildScript } from "./build-task.ts";
import { downloadScript, taskDir, verificationFiles } from "./download-task.ts";
import { planHash, postPlanForApproval } from "./preflight.ts";

/**
 * Stages 4a, 4b and 6 together: the download and the engine build run detached and in parallel while an
 * approver decides. Each run of this step looks once at all three and either goes on to the switch
 * (approved, downloaded, built), ends the swap (rejected, expired, failed), or parks the job until the
 * next look. Nothing on the serving side is touched here.
 */
export async function prepareStage(ctx: StageContext): Promise<StepResult> {
  const { record, deps } = ctx;
  if (record.planTs === undefined) await postPlanForApproval(ctx);
  const failure = (await downloadStep(ctx)) ?? (await buildStep(ctx));
  if (failure !== undefined) {
    await stopTasks(ctx);
    return failure;
  }

  const decision = await deps.store.decision(record.id, record.planHash!);
  if (decision !== undefined && !decision.approved) {
    record.decision = decision;
    ctx.stage("approval", "failed", `rejected by <@${decision.by}>`);
    await stopTasks(ctx);
    return { end: "rejected", reason: `rejected by <@${decision.by}>; downloaded files are kept` };
  }
  if (decision !== undefined) {
    if (record.decision?.at !== decision.at) {
      record.decision = decision;
      ctx.stage("approval", "done", `approved by <@${decision.by}>`);
    }
  } else if (Date.now() > Date.parse(record.approvalExpiresAt!)) {
    ctx.stage("approval", "failed", "nobody approved in time");
    await stopTasks(ctx);
    await updatePlanMessage(ctx, "expired");
    return {
      end: "expired",
      reason: `no approval within ${deps.config.file.approvals.ttlMinutes} min; downloaded files are kept`,
    };
  }

  const ready = (state: string) => state === "done" || state === "skipped";
  const downloaded = ready(record.stages.download.state);
  const built = ready(record.stages.build.state);
  if (record.decision?.approved && downloaded && built) {
    ctx.stage("approval", "done", `approved by <@${record.decision.by}>`);
    return { next: "switch" };
  }
  const waiting = [
    record.decision?.approved ? undefined : "approval",
    downloaded ? undefined : "download",
    built ? undefined : "engine build",
  ].filter(Boolean);
  if (record.decision?.approved)
    ctx.stage(
      "approval",
      "done",
      `approved by <@${record.decision.by}>; waiting for ${waiting.join(" and ")}`,
    );
  await ctx.updateCard();
  const pollMs = deps.config.file.swaps.pollSeconds * 1000;
  if (!record.decision?.approved) return { wait: pollMs }; // a decision wakes the job itself
  // Approved: only the tasks hold the switch back, and each second of a late look is a second added to
  // the swap. Wait on the host for a task's exit file (up to pollSeconds), then look again at once.
  const running = [downloaded ? undefined : "download", built ? undefined : "build"]
    .filter((t): t is "download" | "build" => t !== undefined)
    .map((t) => `${taskDir(ctx.host.modelsDir, record.id, t)}/exit`);
  if (running.length === 0) return { wait: 0 };
  const anyExit = running.map((file) => sh`[ -f ${file} ]`).reduce((a, b) => sh`${a} || ${b}`);
  const rounds = Math.max(1, Math.round(pollMs / 100));
  await ctx.exec(sh`for i in $(seq 1 ${rounds}); do { ${anyExit}; } && break; sleep 0.1; done; true`, {
    timeoutMs: pollMs + 10_000,
  });
  return { wait: 0 };
}

async function downloadStep(ctx: StageContext): Promise<StepResult | undefined> {
  const { record, host, deps } = ctx;
  if (record.stages.download.state === "done" || record.stages.download.state === "skipped") return undefined;
  const info = record.model!;
  const plan = record.plan!;
  const dir = taskDir(host.modelsDir, record.id, "download");
  if (record.tasks.download === undefined && (await detachedStatus(ctx.transport, dir)).state === "running") {
    // A worker died between starting the task and recording it: attach, never start a second `hf`.
    record.tasks.download = { dir, startedAt: new Date().toISOString(), attempts: 1 };
  }
  if (record.tasks.download === undefined) {
    const files = verificationFiles(info);
    await ctx.must(sh`mkdir -p ${dir} && cat > ${`${dir}/sizes`}`, "writing the download's size list", {
      stdin: files.sizes,
    });
    await ctx.must(sh`cat > ${`${dir}/sha256sums`}`, "writing the download's checksums", {
      stdin: files.sums,
    });
    await start(ctx, dir, downloadScript(info, plan.modelDir, dir));
    record.tasks.download = { dir, startedAt: new Date().toISOString(), attempts: 1 };
    ctx.stage("download", "running", "starting");
    await ctx.save();
  }
  const status = await detachedStatus(ctx.transport, dir);
  if (status.state === "exited" && status.exitCode === 0) {
    const seconds = (Date.now() - Date.parse(record.tasks.download.startedAt)) / 1000;
    ctx.stage("download", "done", `${gb(info.totalBytes)} verified in ${formatSeconds(seconds)}`);
    await ctx.say(
      `📦 Download complete: ${info.files.length} files, ${gb(info.totalBytes)}, sizes and sha256 verified.`,
    );
    await ctx.updateCard(true);
    return undefined;
  }
  if (status.state === "exited" || status.state === "dead") {
    const task = record.tasks.download;
    if (task.attempts <= deps.config.file.swaps.downloadRetries) {
      task.attempts += 1;
      ctx.log.warn(
        { attempt: task.attempts, state: status.state, exit: status.exitCode },
        "download failed; restarting",
      );
      await ctx.say(
        `⚠️ Download attempt ${task.attempts - 1} ended (${status.state}${status.exitCode === undefined ? "" : `, exit ${status.exitCode}`}); retrying — complete files are kept.`,
        { log: status.logTail.slice(-8) },
      );
      await start(ctx, dir, downloadScript(info, plan.modelDir, dir));
      await ctx.save();
      return undefined;
    }
    ctx.stage("download", "failed", `failed after ${task.attempts} attempts`);
    await ctx.say("❌ Download failed:", { log: status.logTail });
    return { fail: `the download failed (${status.logTail.at(-1) ?? "no output"})`, touched: false };
  }
  if (status.state === "missing") {
    await start(ctx, dir, downloadScript(info, plan.modelDir, dir));
    return undefined;
  }
  const bytes = await bytesOnDisk(ctx, plan.modelDir);
  const previous = record.download;
  const now = Date.now();
  let rate = previous?.rate;
  if (previous !== undefined && now > Date.parse(previous.at) && bytes >= previous.bytes) {
    rate = ((bytes - previous.bytes) / (now - Date.parse(previous.at))) * 1000;
  }
  record.download = { bytes, at: new Date(now).toISOString(), ...(rate === undefined ? {} : { rate }) };
  const pct = Math.min(100, Math.floor((bytes / Math.max(1, info.totalBytes)) * 100));
  const eta =
    rate !== undefined && rate > 0 ? ` · ETA ${formatSeconds((info.totalBytes - bytes) / rate)}` : "";
  ctx.stage(
    "download",
    "running",
    `${pct} % of ${gb(info.totalBytes)}${rate !== undefined ? ` · ${mb(rate)}/s` : ""}${eta}`,
  );
  return undefined;
}

async function buildStep(ctx: StageContext): Promise<StepResult | undefined> {
  const { record, host, deps } = ctx;
  if (record.stages.build.state === "done" || record.stages.build.state === "skipped") return undefined;
  const dir = taskDir(host.modelsDir, record.id, "build");
  if (record.tasks.build === undefined && (await detachedStatus(ctx.transport, dir)).state === "running") {
    record.tasks.build = { dir, startedAt: new Date().toISOString(), attempts: 1 };
  }
  if (record.tasks.build === undefined) {
    // No HF_TOKEN here: the build runs the engine's own install code, which has no use for it.
    await startDetached(
      ctx.transport,
      dir,
      buildScript({
        engineSourceDir: host.engineSourceDir,
        venv: host.venv,
        upstream: host.engineUpstream,
        ref: record.request.engineRef,
        patches: host.enginePatches,
        dir,
      }),
    );
    record.tasks.build = { dir, startedAt: new Date().toISOString(), attempts: 1 };
    ctx.stage("build", "running", `fetching ${record.request.engineRef}`);
    await ctx.save();
    return undefined;
  }
  const status = await detachedStatus(ctx.transport, dir);
  if (status.state === "running") {
    ctx.stage("build", "running", status.logTail.at(-1)?.slice(0, 80) ?? "building");
    return undefined;
  }
  if (status.state !== "exited" || status.exitCode !== 0) {
    ctx.stage("build", "failed", `exit ${status.exitCode ?? status.state}`);
    await ctx.say("❌ Engine build failed:", { log: status.logTail });
    return { fail: `the engine build failed (${status.logTail.at(-1) ?? status.state})`, touched: false };
  }
  const commit = (await readTaskFile(ctx.transport, `${dir}/commit`))?.trim() ?? "";
  const version = (await readTaskFile(ctx.transport, `${dir}/version`))?.trim() ?? "";
  const previousCommit = (await readTaskFile(ctx.transport, `${dir}/previous-commit`))?.trim() || undefined;
  const help = (await readTaskFile(ctx.transport, `${dir}/help.txt`)) ?? "";
  record.engine = { commit, version, ...(previousCommit === undefined ? {} : { previousCommit }) };
  ctx.stage("build", "done", `commit ${commit.slice(0, 7)} · sglang ${version}`);

  // The flags are checked against this build's own --help: a spelling it lacks is caught now, not at start.
  const before = record.planHash;
  const plan = applyFlagSpellings(record.plan!, parseHelpFlags(help));
  record.plan = plan;
  record.planHash = planHash(plan);
  const failing = plan.checks.filter((c) => !c.ok);
  await ctx.say(
    `🔧 Engine built: commit \`${commit.slice(0, 12)}\` (sglang ${version}); every flag of the plan checked against its \`--help\`.`,
  );
  if (failing.length > 0) {
    await updatePlanMessage(ctx, "refused");
    return {
      fail: failing.map((c) => `${c.detail}${c.fix ? ` (${c.fix})` : ""}`).join("; "),
      touched: false,
    };
  }
  if (record.planHash !== before) {
    const voided = record.decision?.approved === true;
    record.decision = undefined;
    record.approvalExpiresAt = new Date(
      Date.now() + deps.config.file.approvals.ttlMinutes * 60_000,
    ).toISOString();
    ctx.stage("approval", "running", "the plan changed after the engine build: approval needed again");
    if (record.planTs !== undefined) await updatePlanMessage(ctx, "expired");
    await postPlanForApproval(ctx);
    await ctx.say(
      `⚠️ The plan changed after the engine build (flag spellings of this engine)${voided ? "; the earlier approval is void" : ""}. Please review the new plan above.`,
    );
  }
  await ctx.updateCard(true);
  return undefined;
}

/** Starts the download task, the one task that needs HF_TOKEN (gated and private repositories). */
async function start(ctx: StageContext, dir: string, script: ShellCommand): Promise<void> {
  const token = ctx.deps.config.env.HF_TOKEN;
  await startDetached(ctx.transport, dir, script, token === undefined ? {} : { HF_TOKEN: token });
}

/** Bytes under a directory on the host (what a download has written so far, partial files included). */
export async function bytesOnDisk(ctx: StageContext, modelDir: string): Promise<number> {
  const result = await ctx.exec(sh`du -sb --apparent-size ${modelDir} 2>/dev/null | cut -f1`);
  return Number(result.stdout.trim()) || 0;
}

/** Stops the detached download and build; their files stay on the host. */
export async function stopTasks(ctx: StageContext): Promise<void> {
  for (const task of [ctx.record.tasks.download, ctx.record.tasks.build]) {
    if (task !== undefined) await stopDetached(ctx.transport, task.dir).catch(() => undefined);
  }
  for (const name of ["download", "build"] as const) {
    if (ctx.record.stages[name].state === "running") ctx.stage(name, "skipped", "stopped");
  }
}

export async function updatePlanMessage(
  ctx: StageContext,
  status: "approved" | "rejected" | "expired" | "cancelled" | "refused",
  decidedBy?: string,
): Promise<void> {
  const { record, deps } = ctx;
  if (record.planTs === undefined || record.plan === undefined) return;
  await deps.poster.update(
    record.channel,
    record.planTs,
    renderPlan(record.plan, {
      swapId: record.id,
      requester: record.requester,
      status,
      ...(decidedBy === undefined ? {} : { decidedBy }),
    }),
  );
}

const gb = formatGB;

function mb(bytesPerSecond: number): string {
  return `${(bytesPerSecond / 1e6).toFixed(1)} MB`;
}
