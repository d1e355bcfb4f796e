import { isoNow } from "../../../src/clock.ts";
import { unitCommands } from "../../../src/engine/unit-commands.ts";
import { asCodedError, isHostUnreachable } from "../../../src/errors.ts";
import { sh } from "../../../src/host/shell-quote.ts";
import { secondsBetween } from "../../../src/swap/client-impact.ts";
import { failedWith, type StageContext, type StepResult } from "../../../src/swap/stage-context.ts";
import { blueGreenOf, startBeside } from "./blue-green.ts";
import { holdAndDrain } from "./front-door.ts";
import { isParked, parkOld, parks } from "./park.ts";
import { beginSwitch, installUnit, stopLimitMs } from "./unit-steps.ts";

/**
 * Stage 7: install the new unit, reload systemd, `disable --now` the old unit and `enable --now` the new
 * one (enabled, so it survives a reboot). Every step is idempotent, and the record says how far it got, so
 * a worker that dies here resumes the same switch instead of running another.
 */
export async function switchStage(ctx: StageContext): Promise<StepResult> {
  const { swap, host, clock } = ctx;
  const plan = swap.record.plan!;
  const beside = blueGreenOf(plan);
  if (beside !== undefined) return await startBeside(ctx, beside);
  const oldUnit = swap.record.previous!.unit;
  await beginSwitch(ctx);
  await swap.begin("switch", `${oldUnit} → ${plan.unitName}`);
  try {
    await installUnit(ctx);
    if (swap.record.switch!.oldStoppedAt === undefined) {
      // The new weights into the page cache while the old unit still serves (when the plan says so).
      await preload(ctx);
      // Behind a front door: new requests are held and the old unit drained before it stops.
      await holdAndDrain(ctx);
      // A host that served nothing (no such unit file) has nothing to stop.
      if (oldUnit !== plan.unitName && plan.host.currentUnit.exists) {
        const began = swap.record.switch!.stopBeganAt ?? isoNow(clock);
        swap.set({ switch: { ...swap.record.switch!, stopBeganAt: began } });
        if (parks(plan)) await parkOld(ctx);
        else {
          // SGLang drains on SIGTERM (requests in flight end first), bounded by the old unit's
          // TimeoutStopSec: the stop may take that long, longer than a command's usual limit.
          await host.must(host.privileged(unitCommands.disableNow(oldUnit)), `stopping ${oldUnit}`, {
            timeoutMs: stopLimitMs(plan.host.currentUnit.text),
          });
        }
      }
      swap.set({ switch: { ...swap.record.switch!, oldStoppedAt: isoNow(clock) } });
      await swap.checkpoint();
    }
    await host.must(host.privileged(unitCommands.enableNow(plan.unitName)), `starting ${plan.unitName}`);
    const started = swap.record.switch!;
    swap.set({ switch: { ...started, newStartedAt: started.newStartedAt ?? isoNow(clock), done: true } });
  } catch (error) {
    // Every command above is idempotent: an unreachable host gets the same switch again, later.
    if (isHostUnreachable(error)) throw error;
    swap.stage("switch", "failed", asCodedError(error).message);
    return failedWith(error, true);
  }
  const stopped = plan.host.currentUnit.exists && oldUnit !== plan.unitName;
  const parked = isParked(swap.record);
  swap.stage(
    "switch",
    "done",
    `${stopped ? `${oldUnit} ${parked ? "parked" : "stopped and disabled"}; ` : ""}${plan.unitName} enabled and started`,
  );
  const stopSeconds = secondsBetween(swap.record.switch!.stopBeganAt, swap.record.switch!.oldStoppedAt);
  ctx.emit({
    type: "switched",
    ...(stopped ? { from: oldUnit } : {}),
    to: plan.unitName,
    ...(stopped && stopSeconds !== undefined ? { stopSeconds } : {}),
    ...(swap.record.frontDoor === undefined ? {} : { held: true }),
  });
  return { next: "health" };
}

/**
 * `vmtouch -t` of the new model's directory, once per switch, when the plan says the weights fit in the
 * RAM available: the new unit's load then reads memory, not disk. A preload that fails or runs out of
 * time only costs speed: the swap goes on and the thread says so.
 */
async function preload(ctx: StageContext): Promise<void> {
  const { swap, host, clock } = ctx;
  const plan = swap.record.plan!;
  if (plan.clients?.preload?.will !== true || swap.record.switch!.preload !== undefined) return;
  const realBytes = plan.facts.weightBytes * (plan.weightScale ?? 1);
  // a generous limit: 300 MB/s (a slow disk) and a minute more, at most an hour
  const limitSeconds = Math.min(3600, Math.ceil(realBytes / 300e6) + 60);
  const began = clock.now();
  let ok = false;
  let detail: string;
  try {
    const result = await host.exec(sh`vmtouch -t -q -- ${plan.modelDir}`, { timeoutMs: limitSeconds * 1000 });
    ok = result.code === 0;
    detail = ok
      ? ""
      : ((result.stderr.trim() || result.stdout.trim()).split("\n").at(-1)?.slice(0, 200) ?? "");
  } catch (error) {
    if (isHostUnreachable(error)) throw error;
    detail = asCodedError(error).message.slice(0, 200);
  }
  const seconds = (clock.now() - began) / 1000;
  swap.set({ switch: { ...swap.record.switch!, preload: { ok, seconds, detail } } });
  ctx.emit({ type: "preloaded", ok, seconds, detail });
  await swap.checkpoint();
}
