import { runSanity } from "../../../src/engine/sanity.ts";
import { unitCommands } from "../../../src/engine/unit-commands.ts";
import { describeError, isHostUnreachable, passesThrough } from "../../../src/errors.ts";
import { readGpus } from "../../../src/gpu/nvidia-smi.ts";
import { formatGiB } from "../../../src/plan/byte-units.ts";
import { parkedKeepsAtMost } from "../../../src/plan/client-plan.ts";
import type { SwapPlan } from "../../../src/plan/types.ts";
import type { StageContext } from "../../../src/swap/stage-context.ts";
import type { SwapRecord } from "../../../src/swap/swap-record.ts";
import { oldUnitPort } from "../../../src/swap/unit-ports.ts";
import { stopOldUnit } from "./unit-steps.ts";

/*
 * A cold swap that parks the old unit (plan.clients.park, swaps.sleepMode): instead of stopping it, the
 * switch puts it to sleep (its engine's sleep mode: weights to host RAM, GPUs free); a rollback wakes it
 * in seconds; once the new model is released, it stops. Each step is recorded (switch.parked), and each
 * command is idempotent (a sleeping server asked to sleep again, or a woken one to wake, answers 200), so
 * a worker that dies anywhere here is followed by one that goes on.
 */

/** How long a sleep or a wake may take: the weights cross PCIe both ways (a 400 GB model: minutes). */
const SLEEP_LIMIT_SECONDS = 600;

/** Whether this swap's plan parks the old unit. */
export function parks(plan: SwapPlan | undefined): boolean {
  return plan?.clients?.park?.will === true;
}

/** Whether the old unit is parked now (asleep: neither woken nor stopped, nor failed to sleep). */
export function isParked(record: Readonly<SwapRecord>): boolean {
  const parked = record.switch?.parked;
  return (
    parked !== undefined &&
    parked.failed === undefined &&
    parked.wokenAt === undefined &&
    parked.stoppedAt === undefined
  );
}

/**
 * Parks the old unit, in place of its stop. A server that will not sleep (its answer is not 200), or whose
 * GPUs nvidia-smi does not then see freed, is stopped instead, as a cold swap would, and the thread says
 * so: the swap goes on, a rollback reloads it. A worker that died after sending the request does not send
 * it again (what the engine did with it is unknown, and an SGLang release sent twice can take the server
 * down): it stops the unit.
 */
export async function parkOld(
  ctx: Pick<StageContext, "clock" | "emit" | "host" | "previousEngine" | "signal" | "swap">,
): Promise<void> {
  const { swap, host, clock } = ctx;
  const record = swap.record;
  if (record.switch?.parked !== undefined) return;
  const oldUnit = record.previous!.unit;
  const sleep = ctx.previousEngine.sleep;
  const began = clock.now();
  let failed: string | undefined;
  let keptMiB: number | undefined;
  if (sleep === undefined) failed = `${ctx.previousEngine.name} has no sleep mode`;
  else if (record.switch?.parkBeganAt !== undefined)
    failed =
      "the worker that was parking it stopped before the answer was recorded; the request may have reached the engine, so it is not sent again";
  else {
    swap.to.parkBegan();
    await swap.checkpoint();
    const port = oldUnitPort(record, host.config.servingPort);
    const result = await host.tryChange(sleep.sleepCommand(port, SLEEP_LIMIT_SECONDS), {
      timeoutMs: (SLEEP_LIMIT_SECONDS + 30) * 1000,
    });
    const status = result.stdout.trim().split("\n").at(-1) ?? "";
    if (status !== "200") failed = `the ${sleep.name} did not park it: ${answered(status, result.code)}`;
    else {
      try {
        const freed = await waitFreed(ctx, parkedKeepsAtMost(sleep));
        keptMiB = freed.keptMiB;
        if (!freed.ok)
          failed = `one of its GPUs still held ${formatGiB(freed.keptMiB * 2 ** 20)} ${FREED_WAIT_SECONDS} s after the release (nvidia-smi), more than the new unit's plan leaves it`;
      } catch (error) {
        // a host away is the switch's to retry (parkBeganAt: the retry stops the unit); else no proof, no park
        if (passesThrough(error) || isHostUnreachable(error)) throw error;
        failed = `nvidia-smi could not show its GPUs freed after the release: ${describeError(error)}`;
      }
    }
  }
  if (failed !== undefined) await stopOldUnit(ctx);
  const seconds = (clock.now() - began) / 1000;
  swap.to.parked(failed);
  ctx.emit({
    type: "parked",
    unit: oldUnit,
    seconds,
    ...(failed === undefined ? {} : { failed }),
    ...(failed === undefined && keptMiB !== undefined ? { keptGiB: keptMiB / 1024 } : {}),
  });
  await swap.checkpoint();
}

/** How long the GPUs may take to show a release: it can answer before the memory is free (THUDM/slime#579). */
const FREED_WAIT_SECONDS = 30;

/**
 * Waits until nvidia-smi shows the parked unit's GPUs (those it used at plan time) holding no more than the
 * plan left a parked engine (parkedKeepsAtMost: the new unit's memory share was sized for it; vLLM refuses
 * to start with less free), and returns what the fullest of them holds: the figure the thread gives.
 */
async function waitFreed(
  ctx: Pick<StageContext, "clock" | "host" | "signal" | "swap">,
  limitBytes: number,
): Promise<{ ok: boolean; keptMiB: number }> {
  const planGpus = ctx.swap.record.plan!.host.gpus;
  const used = planGpus.filter((g) => g.memoryUsedMiB > 1024).map((g) => g.index);
  const limitMiB = limitBytes / 2 ** 20;
  const deadline = ctx.clock.now() + FREED_WAIT_SECONDS * 1000;
  for (;;) {
    const gpus = (await readGpus(ctx.host)).filter((g) => used.length === 0 || used.includes(g.index));
    const keptMiB = Math.max(0, ...gpus.map((g) => g.memoryUsedMiB));
    if (keptMiB <= limitMiB || ctx.clock.now() >= deadline) return { ok: keptMiB <= limitMiB, keptMiB };
    await ctx.clock.sleep(1000, ctx.signal);
  }
}

/** A park or wake command's last line, for people: an HTTP status, nothing, or the command's own word. */
function answered(status: string, code: number | null): string {
  if (status === "000" || status === "") return `nothing answered (curl exit ${code})`;
  return /^\d+$/.test(status) ? `HTTP ${status}` : status;
}

/**
 * The rollback's way back to a parked unit: wake it. One that will not wake is stopped and started
 * again (a cold reload, the commands the sudo rules allow), which the caller's health wait then awaits.
 * A woken one is not yet trusted: checkWoken asks it the sanity prompts once it is healthy.
 */
export async function wakeParked(
  ctx: Pick<StageContext, "clock" | "emit" | "host" | "log" | "previousEngine" | "swap">,
): Promise<void> {
  const { swap, host, clock } = ctx;
  const oldUnit = swap.record.previous!.unit;
  const sleep = ctx.previousEngine.sleep;
  const began = clock.now();
  let failed = `${ctx.previousEngine.name} has no sleep mode`;
  if (swap.record.switch?.parked?.wakeBeganAt !== undefined)
    failed =
      "the worker that was waking it stopped before the answer was recorded; the request may have reached the engine, so it is reloaded rather than woken twice";
  else if (sleep !== undefined) {
    swap.to.wakeBegan();
    await swap.checkpoint();
    const port = oldUnitPort(swap.record, host.config.servingPort);
    const result = await host.tryChange(sleep.wakeCommand(port, SLEEP_LIMIT_SECONDS), {
      timeoutMs: (SLEEP_LIMIT_SECONDS + 30) * 1000,
    });
    const status = result.stdout.trim().split("\n").at(-1) ?? "";
    if (status === "200") {
      swap.to.parkedWoken((clock.now() - began) / 1000);
      await swap.checkpoint();
      return;
    }
    failed = `it did not wake: ${answered(status, result.code)}`;
  }
  ctx.log.warn({ unit: oldUnit, why: failed }, "the parked unit did not wake; restarting it");
  await reload(ctx, failed);
}

/**
 * A woken model answers the sanity prompts before the front door gives it requests again: a CPU backup
 * has come back corrupted (torch_memory_saver#71, H100), and a wake that answers 200 says nothing of the
 * weights. One that fails is reloaded from disk (stopped and started again, as a cold rollback would);
 * `reloaded` tells the caller to await its health again. Once sane or reloaded, this does nothing more.
 */
export async function checkWoken(
  ctx: Pick<StageContext, "emit" | "host" | "log" | "previousEngine" | "settings" | "swap">,
): Promise<{ reloaded: boolean }> {
  const { swap, host } = ctx;
  const parked = swap.record.switch?.parked;
  if (parked?.wokenAt === undefined || parked.reloadedAt !== undefined || parked.sane === true)
    return { reloaded: false };
  const unit = swap.record.previous!.unit;
  let why: string;
  try {
    const report = await runSanity(
      ctx.previousEngine,
      (command, options) => host.exec(command, options),
      oldUnitPort(swap.record, host.config.servingPort),
      { timeoutMs: ctx.settings.sanityTimeoutSeconds * 1000 },
    );
    if (report.ok) {
      swap.to.parkedSane();
      ctx.emit({
        type: "unparked",
        unit,
        how: "woken",
        ...(parked.wakeSeconds === undefined ? {} : { seconds: parked.wakeSeconds }),
      });
      await swap.checkpoint();
      return { reloaded: false };
    }
    why = `it woke, but its sanity check failed: ${report.summary}`;
  } catch (error) {
    if (passesThrough(error) || isHostUnreachable(error)) throw error;
    why = `it woke, but its sanity check could not run: ${describeError(error)}`;
  }
  ctx.log.warn({ unit, why }, "the woken unit failed its sanity check; reloading it");
  await reload(ctx, why);
  return { reloaded: true };
}

/**
 * A woken unit that did not become healthy is reloaded from disk (once): `true` when it was, and the caller
 * awaits its health again.
 */
export async function reloadUnhealthyWoken(
  ctx: Pick<StageContext, "emit" | "host" | "swap">,
  why: string,
): Promise<boolean> {
  const parked = ctx.swap.record.switch?.parked;
  if (parked?.wokenAt === undefined || parked.reloadedAt !== undefined) return false;
  await reload(ctx, `it woke, but did not answer its health probe: ${why}`);
  return true;
}

/**
 * The parked unit stopped and started again: its weights read from disk, as a cold rollback's are. The
 * stop comes before the record says so: a worker that dies between them finds a stopped unit, which the
 * rollback starts from disk and checks again, never a woken one it takes for reloaded.
 */
async function reload(ctx: Pick<StageContext, "emit" | "host" | "swap">, why: string): Promise<void> {
  const { swap, host } = ctx;
  const unit = swap.record.previous!.unit;
  // a stop that fails is no reload: the unit that failed its checks would keep serving (the error says so)
  await stopOldUnit(ctx);
  swap.to.parkedReloaded();
  ctx.emit({ type: "unparked", unit, how: "reloaded", why });
  await swap.checkpoint();
  await host.change(unitCommands.enableNow(unit), `starting ${unit}`, { privileged: true });
}

/**
 * Once the new model is released, the parked unit stops (and is disabled, as a cold swap's old unit).
 * Its stop never fails the swap: the new model serves, and the audit says what was left.
 */
export async function stopParked(ctx: Pick<StageContext, "emit" | "host" | "swap">): Promise<void> {
  const { swap } = ctx;
  if (!isParked(swap.record)) return;
  const oldUnit = swap.record.previous!.unit;
  try {
    await stopOldUnit(ctx);
  } catch (error) {
    if (passesThrough(error)) throw error;
    swap.audit("stage", `the parked unit ${oldUnit} could not be stopped: ${describeError(error)}`);
    return;
  }
  swap.to.parkedStopped();
  ctx.emit({ type: "unparked", unit: oldUnit, how: "stopped" });
  await swap.checkpoint();
}
