import { requestApproval } from "../../../src/approval/gate.ts";
import { planHash } from "../../../src/approval/plan-hash.ts";
import { isoNow } from "../../../src/clock.ts";
import { hostEngine } from "../../../src/config/host-engines.ts";
import { describeEngineSource } from "../../../src/engine/engine-source.ts";
import { applyFlagSpellings, parseHelpOptions } from "../../../src/plan/flag-spellings.ts";
import type { StageContext, StepResult } from "../../../src/swap/stage-context.ts";
import { eventLines } from "../../../src/swap/swap-events.ts";
import { buildScript } from "./build-task.ts";
import { taskDir } from "./download-task.ts";

/**
 * A ref engine.allowedRefs does not list (a pull request, say) is fetched and built only once an
 * approver has approved the plan that says so: until then none of its code is on the host, let alone run.
 */
export function waitsForApproval(ctx: Pick<StageContext, "swap">): boolean {
  const { record } = ctx.swap;
  if (record.plan?.engine?.buildAfterApproval !== true || record.tasks.build !== undefined) return false;
  if (record.decision?.approved === true) return false;
  if (record.stages.build.state === "pending" && record.stages.build.detail === undefined) {
    ctx.swap.stage("build", "pending", "starts after approval: the engine ref is not a listed branch or tag");
  }
  return true;
}

/**
 * Stage 4b, one look: start the detached engine build (once), and when it is done check every flag of
 * the plan against the build's own `--help`. A flag the build spells differently changes the plan, and a
 * changed plan is put up for approval again (an approval of the old one is void); a flag it lacks refuses
 * the plan, with nothing on the serving side touched. Returns a failure, or undefined to go on.
 */
export async function buildStep(
  ctx: Pick<
    StageContext,
    "clock" | "emit" | "engine" | "gate" | "host" | "log" | "settings" | "signal" | "swap"
  >,
): Promise<StepResult | undefined> {
  if (waitsForApproval(ctx)) return undefined;
  const { swap, host, clock } = ctx;
  const { record } = swap;
  if (record.stages.build.state === "done" || record.stages.build.state === "skipped") return undefined;
  const dir = taskDir(host.config.modelsDir, record.id, "build");
  if (record.tasks.build === undefined && (await host.taskStatus(dir)).state === "running") {
    swap.set({ tasks: { ...record.tasks, build: { dir, startedAt: isoNow(clock), attempts: 1 } } });
  }
  if (swap.record.tasks.build === undefined) {
    const engine = record.plan?.engine;
    if (engine === undefined) {
      swap.stage("build", "failed", "the plan names no engine source");
      return {
        fail: "the plan was made by an older modelswap, which built the engine in place: request the swap again",
        touched: false,
      };
    }
    // No HF_TOKEN here: the build runs the engine's own code, which has no use for it.
    const plan = record.plan!;
    const configured = hostEngine(host.config, plan.engineKind);
    const tag =
      engine.kind === "tag" ? /^v?(\d+\.\d+\.\d+\S*)$/.exec(engine.ref.replace(/^refs\/tags\//, "")) : null;
    await host.startTask(
      dir,
      buildScript({
        kind: plan.engineKind,
        upstream: engine.upstream,
        fetchRef: engine.fullRef ?? engine.commit,
        commit: engine.commit,
        ...(tag === null ? {} : { tagVersion: tag[1]! }),
        buildDir: engine.buildDir,
        venv: plan.venv,
        patches: configured.ok ? configured.engine.patches : [],
        compileKernels: engine.compileKernels === true,
        dir,
      }),
    );
    swap.set({ tasks: { ...swap.record.tasks, build: { dir, startedAt: isoNow(clock), attempts: 1 } } });
    swap.stage("build", "running", `fetching ${describeEngineSource(engine)}`);
    await swap.checkpoint();
    return undefined;
  }
  const status = await host.taskStatus(dir);
  if (status.state === "running") {
    swap.stage("build", "running", status.logTail.at(-1)?.slice(0, 80) ?? "building");
    return undefined;
  }
  if (status.state !== "exited" || status.exitCode !== 0) {
    swap.stage("build", "failed", `exit ${status.exitCode ?? status.state}`);
    ctx.emit({ type: "build-failed", log: eventLines(status.logTail) });
    return { fail: `the engine build failed (${status.logTail.at(-1) ?? status.state})`, touched: false };
  }
  const commit = (await host.readTaskFile(`${dir}/commit`))?.trim() ?? "";
  const version = (await host.readTaskFile(`${dir}/version`))?.trim() ?? "";
  const help = (await host.readTaskFile(`${dir}/help.txt`)) ?? "";
  swap.set({ engine: { commit, version } });
  swap.stage("build", "done", `commit ${commit.slice(0, 7)} · ${ctx.engine.packageName} ${version}`);
  ctx.emit({
    type: "built",
    commit,
    version,
    engine: ctx.engine.kind,
  });

  // The flags are checked against this build's own --help: a spelling it lacks is caught now, not at start.
  const before = swap.record.planHash!;
  const options = parseHelpOptions(help);
  const plan = applyFlagSpellings(swap.record.plan!, new Set(options.keys()), options);
  swap.set({ plan, planHash: planHash(plan) });
  const failing = plan.checks.filter((c) => !c.ok);
  if (failing.length > 0) {
    ctx.emit({ type: "planned", planHash: swap.record.planHash!, status: "refused" });
    return {
      fail: failing.map((c) => `${c.detail}${c.fix ? ` (${c.fix})` : ""}`).join("; "),
      touched: false,
    };
  }
  if (swap.record.planHash !== before) {
    // an approval may have come in since the last look: the gate knows, the record may not yet
    const approved = (await ctx.gate.decision(before))?.approved === true;
    requestApproval(ctx, { planHash: before, voided: approved, why: "flag spellings of this engine" });
  }
  return undefined;
}
