import { unitCommands } from "../../../src/engine/unit-commands.ts";
import { asCodedError, describeError, isHostUnreachable, passesThrough } from "../../../src/errors.ts";
import { sh } from "../../../src/host/shell-quote.ts";
import { failedWith, type StageContext, type StepResult } from "../../../src/swap/stage-context.ts";
import { newUnitPort } from "../../../src/swap/unit-ports.ts";
import { servedPathOf } from "./final-check.ts";
import { holdAndDrain, holdForRollback, releaseStage } from "./front-door.ts";
import { frontDoorBack, settleBack, waitOldHealthy } from "./rollback.ts";
import { type RollbackResult, rollbackFailed } from "./rollback-result.ts";
import { preload } from "./switch.ts";
import { beginSwitch, installUnit, stopOldUnit } from "./unit-steps.ts";

/*
 * A new revision loaded into the running engine (issue #31, docs/architecture.md): the new weights are read
 * into the page cache while the old ones serve; behind a front door new requests are held and the slot
 * drained; then the engine loads them (SGLang's update_weights_from_disk: its writer lock lets requests in
 * flight finish and holds new ones, and it rolls back to the weights it had when the new ones do not fit).
 * The same process serves on: health, sanity and the benchmark check it as they check a new unit. Only
 * once it passed health and sanity does the unit's file get the new model path (so a restart, a reboot,
 * serves what was checked). The way back loads the old weights again, or restarts the unit from its file.
 */

/** The engine's own bound on a load: the plan's health limit (a load from disk is no longer than a start). */
function loadLimitSeconds(ctx: Pick<StageContext, "swap">): number {
  return Math.max(60, ctx.swap.record.plan!.healthTimeoutSeconds);
}

/** The model directory the engine on `port` says it serves; undefined when it does not answer. */
async function servedPath(
  ctx: Pick<StageContext, "host" | "engine">,
  port: number,
): Promise<string | undefined> {
  const result = await ctx.host.exec(
    sh`curl -s --max-time 10 ${`http://127.0.0.1:${port}${ctx.engine.modelInfoPath}`} || true`,
  );
  return servedPathOf(ctx.engine, result.stdout);
}

/**
 * Asks the engine on `port` to load `modelDir`: `ok` once it answered 200, else its answer (the engine's
 * message, or that nothing answered).
 */
async function load(
  ctx: Pick<StageContext, "host" | "engine" | "swap">,
  port: number,
  modelDir: string,
): Promise<{ ok: true } | { ok: false; why: string }> {
  const limit = loadLimitSeconds(ctx);
  const result = await ctx.host.tryChange(ctx.engine.inPlace!.updateCommand(port, modelDir, limit), {
    timeoutMs: (limit + 30) * 1000,
  });
  const lines = result.stdout.trim().split("\n");
  const status = lines.at(-1) ?? "";
  if (status === "200") return { ok: true };
  return { ok: false, why: engineAnswer(lines.slice(0, -1).join("\n"), status, result.stderr) };
}

/** The engine's refusal in one line: its JSON `message` when it gave one, else what curl saw. */
function engineAnswer(body: string, status: string, stderr: string): string {
  let message: unknown;
  try {
    message = (JSON.parse(body) as { message?: unknown }).message;
  } catch {
    message = undefined;
  }
  const said = typeof message === "string" ? message : body.trim() || stderr.trim();
  const http = status === "" || status === "000" ? "no answer" : `HTTP ${status}`;
  return `${http}${said === "" ? "" : `: ${said.replace(/\s+/g, " ").slice(0, 400)}`}`;
}

/**
 * The in-place mode's start: the preload, the hold, the load. A worker that died after asking finds out
 * from the engine which weights it serves (the load changes the served path only once the new weights
 * are in), and asks again if they are still the old ones: a second load of the same directory is the
 * same load, never harmful as a second wake of a parked engine is.
 */
export async function loadInPlace(ctx: StageContext): Promise<StepResult> {
  const { swap, host, clock } = ctx;
  const plan = swap.record.plan!;
  const mechanism = ctx.engine.inPlace?.name ?? "in place";
  const port = newUnitPort(plan, host.config.servingPort);
  await beginSwitch(ctx);
  await swap.begin("switch", `the new weights into ${plan.unitName}, in place (${mechanism})`);
  try {
    if (ctx.engine.inPlace === undefined)
      throw new Error(`${ctx.engine.name} has no in-place load: this plan cannot be carried out`);
    if (swap.record.switch!.inPlace?.at === undefined) {
      await preload(ctx);
      await holdAndDrain(ctx);
      const asked = swap.record.switch!.inPlace !== undefined;
      if (asked && (await servedPath(ctx, port)) === plan.modelDir) swap.to.updated(undefined);
      else {
        swap.to.updateBegan();
        await swap.checkpoint();
        const began = clock.now();
        const result = await load(ctx, port, plan.modelDir);
        if (!result.ok) {
          swap.to.updateRefused(result.why);
          ctx.emit({ type: "updated", unit: plan.unitName, mechanism, refused: result.why });
          swap.stage("switch", "failed", result.why);
          return {
            fail: `the engine did not load the new weights: ${result.why}`,
            touched: true,
            code: "IN_PLACE_REFUSED",
            fix: `the engine's journal (journalctl -u ${plan.unitName}) says why; the plan's in-place check (src/plan/in-place-fit.ts) missed a difference between the revisions: swap with swaps.inPlace off to load it cold`,
          };
        }
        swap.to.updated((clock.now() - began) / 1000);
      }
      const inPlace = swap.record.switch!.inPlace!;
      ctx.emit({
        type: "updated",
        unit: plan.unitName,
        mechanism,
        ...(inPlace.seconds === undefined ? {} : { seconds: inPlace.seconds }),
        ...(swap.record.switch!.oldMainPid ? { mainPid: swap.record.switch!.oldMainPid } : {}),
      });
      await swap.checkpoint();
    }
  } catch (error) {
    if (passesThrough(error)) throw error;
    swap.stage("switch", "failed", asCodedError(error).message);
    return failedWith(error, true);
  }
  const seconds = swap.record.switch!.inPlace?.seconds;
  swap.stage(
    "switch",
    "done",
    `${plan.unitName}: the new weights loaded in place${seconds === undefined ? "" : ` in ${seconds.toFixed(1)} s`}`,
  );
  return { next: "health" };
}

/**
 * After health and sanity: the running unit's file gets the new model path (a restart serves what was
 * checked), then the held requests go to it.
 */
export async function takeInPlace(ctx: StageContext): Promise<StepResult> {
  const { swap } = ctx;
  if (swap.record.switch?.inPlace?.unitWrittenAt === undefined) {
    await installUnit(ctx);
    swap.to.inPlaceUnitWritten();
    await swap.checkpoint();
  }
  return await releaseStage(ctx);
}

/**
 * An in-place swap's way back: the old weights loaded into the same engine again, or, when that fails, the
 * unit restarted from its file with the old model path (a cold reload); behind a front door new requests
 * are held meanwhile and released to the unit's slot. Whether it then serves is for the final check.
 */
export async function undoInPlace(ctx: StageContext, why: string): Promise<RollbackResult> {
  return await frontDoorBack(ctx, await loadBack(ctx, why));
}

/** The old weights back in the unit (loaded back, or the unit restarted), and its health awaited. */
async function loadBack(ctx: StageContext, why: string): Promise<RollbackResult> {
  const { swap, host, clock } = ctx;
  const plan = swap.record.plan!;
  const unit = plan.unitName;
  const from = plan.clients!.inPlace!;
  const oldDir = from.fromModelDir!;
  const port = newUnitPort(plan, host.config.servingPort);
  if (swap.record.rollbackStartedAt === undefined) {
    swap.to.rollbackBegan();
    ctx.emit({ type: "rolling-back", to: unit, stopping: unit, why });
  }
  const fd = host.frontDoor;
  const oldText = plan.host.currentUnit.text;
  try {
    if (fd !== undefined && swap.record.frontDoor !== undefined)
      await holdForRollback(ctx, fd).catch((error: unknown) => {
        if (passesThrough(error)) throw error;
        ctx.log.warn({ err: describeError(error) }, "the rollback could not hold requests at the front door");
      });
    // a switch that failed before the load was asked for (the host or the front door away) changed no
    // weights: the engine is only asked which it serves, and loaded back if need be
    const sw = swap.record.switch?.inPlace;
    // its file first: whatever comes next, a restart serves the old weights
    if (sw?.unitWrittenAt !== undefined) await installUnit({ host, swap }, oldText);
    if (sw?.revertedAt === undefined && sw?.restartedAt === undefined) {
      const serving = await servedPath(ctx, port);
      if (serving !== oldDir) {
        const began = clock.now();
        if (sw !== undefined) {
          swap.to.revertBegan();
          await swap.checkpoint();
        }
        const back =
          serving === undefined
            ? { ok: false as const, why: "the engine does not answer" }
            : await load(ctx, port, oldDir);
        if (back.ok) {
          if (sw !== undefined) swap.to.reverted(false);
          ctx.emit({ type: "reverted", unit, how: "loaded-back", seconds: (clock.now() - began) / 1000 });
        } else {
          // the commands the sudo rules allow: stopped, then started from its file (the old model path)
          await stopOldUnit(ctx);
          await host.change(unitCommands.enableNow(unit), `starting ${unit}`, { privileged: true });
          if (sw !== undefined) swap.to.reverted(true);
          ctx.emit({
            type: "reverted",
            unit,
            how: "restarted",
            why: `the old weights did not load back: ${back.why}`,
          });
        }
        await swap.checkpoint();
      }
    }
  } catch (error) {
    return rollbackFailed(error);
  }
  let health: Awaited<ReturnType<typeof waitOldHealthy>>;
  try {
    health = await waitOldHealthy(ctx, unit, port);
  } catch (error) {
    if (!isHostUnreachable(error)) throw error;
    return { ok: false, detail: describeError(error), unreachable: error };
  }
  return await settleBack(ctx, unit, health, `${unit} serves the old weights again`);
}
