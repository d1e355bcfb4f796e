import { isoNow } from "../../../src/clock.ts";
import { describeStartup } from "../../../src/engine/startup-phases.ts";
import { describeError, passesThrough } from "../../../src/errors.ts";
import { duration } from "../../../src/format-duration.ts";
import { sh } from "../../../src/host/shell-quote.ts";
import { interestingTail } from "../../../src/status/probe-host.ts";
import type { StageContext, StepResult } from "../../../src/swap/stage-context.ts";
import { eventLines } from "../../../src/swap/swap-events.ts";
import { portOf } from "./blue-green.ts";
import { isParked } from "./park.ts";
import { journalSince, waitHealthy } from "./wait-healthy.ts";

/**
 * A healthy answer on the port is not yet the new model: the old process may still hold it (a unit that
 * did not really start), or another server. The new unit must have a process of its own, not the old
 * unit's, and the server must say it serves the new weights (the engine's model info: SGLang's
 * /get_model_info, vLLM's /v1/models). Returns what is wrong, or the unit's process.
 */
export async function servesTheNewModel(
  ctx: Pick<StageContext, "swap" | "host" | "engine">,
): Promise<{ wrong: string } | { mainPid: number }> {
  const { record } = ctx.swap;
  const plan = record.plan!;
  const port = portOf(ctx);
  const result = await ctx.host.exec(sh`
    systemctl show -p MainPID --value ${plan.unitName}
    echo ---info---
    curl -s --max-time 10 ${`http://127.0.0.1:${port}${ctx.engine.modelInfoPath}`} || true`);
  const [pidText = "", infoText = ""] = result.stdout.split("---info---\n");
  const pid = Number(pidText.trim()) || 0;
  if (pid === 0) return { wrong: `${plan.unitName} has no process, yet something answers on port ${port}` };
  const oldPid = record.switch?.oldMainPid ?? 0;
  // in place, the process that loaded the new weights is the one that served the old ones
  if (record.switch?.inPlace !== undefined) {
    if (oldPid !== 0 && pid !== oldPid)
      return {
        wrong: `${plan.unitName} was restarted during the in-place load (MainPID ${pid}, was ${oldPid}): its new process loaded the weights its unit file names, not the new ones`,
      };
  } else if (oldPid !== 0 && pid === oldPid)
    return {
      wrong: `${plan.unitName} runs the old unit's process (MainPID ${pid}): nothing new was started`,
    };
  let modelPath: unknown;
  try {
    modelPath = ctx.engine.servedModelPath(infoText);
  } catch {
    return {
      wrong: `the server on port ${port} does not say what it serves (${ctx.engine.modelInfoPath}: ${infoText.trim().slice(0, 80) || "no answer"})`,
    };
  }
  if (modelPath !== plan.modelDir)
    return {
      wrong: `the server on port ${port} serves ${String(modelPath)}, not the new weights in ${plan.modelDir}`,
    };
  return { mainPid: pid };
}

/**
 * What to try when the new unit did not become healthy (said once, at the end): the journal's fatal line
 * or the timeout says why, and each cause has its own fix.
 */
export function healthFix(why: string, limitSeconds: number): string {
  if (why.startsWith("not healthy after"))
    return `a model that merely loads slowly needs a longer limit: swaps.healthTimeoutSeconds (this swap's limit was ${duration(limitSeconds)}); the journal above shows how far the load got`;
  if (/ImportError|ModuleNotFoundError|undefined symbol/.test(why))
    return "the engine build does not load on this host: try another build (--engine-ref a newer tag or branch)";
  if (/NaN/.test(why))
    return "NaN logits mean a kernel is broken on this GPU: try another engine build (--engine-ref a newer tag or branch), or other backends for this recipe (recipes.overrides in the config)";
  if (/out of memory|OutOfMemoryError|Not enough memory/i.test(why))
    return "the model does not fit in the GPUs' memory: more GPUs (--tp) or a smaller checkpoint";
  return "the journal above says why the server stopped: check the plan's flags against the engine (recipes.overrides in the config) or try another engine build (--engine-ref)";
}

/**
 * The new unit's journal lines that may time its start, since its last start: the health wait reads only
 * the last 200 lines, which a chatty start at tp 8 (a line per rank per step) can push its weights line out
 * of. Read once, when healthy; the engine parses them (Engine.startupPhases). None when the host could not
 * say: the phases are then not shown, never guessed.
 */
async function startupLines(ctx: StageContext, unit: string): Promise<string[]> {
  try {
    const result = await ctx.host.exec(
      sh`journalctl -u ${unit} -n 20000 --no-pager -o cat 2>/dev/null | grep -aiE ${"^Start(ed|ing) |weight|graph|compile"} | tail -n 2000`,
    );
    return journalSince(result.stdout.split("\n").filter((l) => l !== ""));
  } catch (error) {
    if (passesThrough(error)) throw error;
    ctx.log.warn({ err: describeError(error) }, "the new unit's start-up lines could not be read");
    return [];
  }
}

/** How often a long health wait saves its progress (the card shows it; the reporter paces the edits). */
const PROGRESS_EVERY_MS = 5000;

/** Stage 8: wait for the new server to answer a generation; the downtime clock stops here. */
export async function healthStage(ctx: StageContext): Promise<StepResult> {
  const { swap, clock } = ctx;
  const plan = swap.record.plan!;
  const limit = ctx.settings.healthTimeoutSeconds ?? plan.healthTimeoutSeconds;
  await swap.begin("health", `waiting for ${ctx.engine.healthLabel} (limit ${duration(limit)})`);
  const startedAt = Date.parse(swap.record.switch?.newStartedAt ?? isoNow(clock));
  let saved = clock.now();
  const result = await waitHealthy(
    ctx,
    plan.unitName,
    limit,
    async (elapsed) => {
      swap.stage("health", "running", `loading for ${duration(elapsed)} (limit ${duration(limit)})`);
      if (clock.now() - saved < PROGRESS_EVERY_MS) return;
      saved = clock.now();
      await swap.checkpoint();
    },
    startedAt,
    portOf(ctx),
  );
  if (!result.healthy) {
    swap.stage("health", "failed", result.why);
    ctx.emit({
      type: "health-failed",
      unit: plan.unitName,
      why: result.why,
      journal: eventLines(interestingTail(result.journal)),
    });
    return { fail: result.why, touched: true, code: "HEALTH_FAILED", fix: healthFix(result.why, limit) };
  }
  const serves = await servesTheNewModel(ctx);
  if ("wrong" in serves) {
    swap.stage("health", "failed", serves.wrong);
    return {
      fail: serves.wrong,
      touched: true,
      code: "HEALTH_FAILED",
      fix: `something other than the new unit answers on port ${portOf(ctx)}: stop it (ss -ltnp shows the process), then swap again`,
    };
  }
  const healthyAt = isoNow(clock);
  // where the start went, as the engine timed it: what the next swap could save, and where
  const loadSeconds = Math.max(0, (Date.parse(healthyAt) - startedAt) / 1000);
  // in place, nothing started: the unit's start-up lines are its first start's
  const inPlace = swap.record.switch?.inPlace !== undefined;
  const phases = inPlace ? {} : ctx.engine.startupPhases(await startupLines(ctx, plan.unitName));
  swap.to.started({ ...phases, loadSeconds });
  const startup = describeStartup(phases, loadSeconds);
  const its = startup === undefined ? "" : `; its start: ${startup}`;
  if (swap.record.switch?.beside === true) {
    // blue/green: production is still on the old unit; no downtime so far, and the flip adds none
    swap.to.healthy(plan.unitName, serves.mainPid, 0);
    swap.stage(
      "health",
      "done",
      `healthy after ${duration(loadSeconds)} of loading, beside the old unit${its}`,
    );
    ctx.emit({ type: "healthy", unit: plan.unitName, downtimeSeconds: 0 });
    return { next: "sanity" };
  }
  const downtimeSeconds = (Date.parse(healthyAt) - Date.parse(swap.record.switch!.oldStoppedAt!)) / 1000;
  swap.to.healthy(plan.unitName, serves.mainPid, downtimeSeconds);
  // a park that worked left the old unit running, its weights in host RAM: it was parked, not stopped
  const old = inPlace ? "stopped serving (in place)" : isParked(swap.record) ? "was parked" : "stopped";
  swap.stage("health", "done", `healthy ${duration(downtimeSeconds)} after the old unit ${old}${its}`);
  ctx.emit({ type: "healthy", unit: plan.unitName, downtimeSeconds });
  return { next: "sanity" };
}
