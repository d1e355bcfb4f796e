import { unitCommands } from "../../../src/engine/unit-commands.ts";
import { asCodedError, passesThrough } from "../../../src/errors.ts";
import { sh } from "../../../src/host/shell-quote.ts";
import { secondsBetween } from "../../../src/swap/client-impact.ts";
import { failedWith, type StageContext, type StepResult } from "../../../src/swap/stage-context.ts";
import { holdAndDrain } from "./front-door.ts";
import { isParked, parkOld, parks } from "./park.ts";
import { beginSwitch, installUnit, stopOldUnit } from "./unit-steps.ts";

/**
 * Stage 7 of a cold swap: install the new unit, reload systemd, `disable --now` the old unit (or park it)
 * and `enable --now` the new one (enabled, so it survives a reboot). Every step is idempotent, and the
 * record says how far it got, so a worker that dies here resumes the same switch instead of running
 * another. (A blue/green swap starts its new unit beside the old one instead: blue-green.ts.)
 */
export async function switchStage(ctx: StageContext): Promise<StepResult> {
  const { swap, host } = ctx;
  const plan = swap.record.plan!;
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
        swap.to.oldStopBegan();
        if (parks(plan)) await parkOld(ctx);
        else {
          // SGLang drains on SIGTERM (requests in flight end first), bounded by the old unit's
          // TimeoutStopSec: the stop may take that long, longer than a command's usual limit.
          await stopOldUnit(ctx);
        }
      }
      swap.to.oldStopped();
      await swap.checkpoint();
    }
    await host.change(unitCommands.enableNow(plan.unitName), `starting ${plan.unitName}`, {
      privileged: true,
    });
    swap.to.newStarted();
  } catch (error) {
    // Every command above is idempotent: an unreachable host gets the same switch again, later.
    if (passesThrough(error)) throw error;
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
    ...(stopped && parked ? { parked: true } : {}),
    ...(swap.record.frontDoor === undefined ? {} : { held: true }),
  });
  return { next: "health" };
}

/**
 * `vmtouch -t` of the new model's directory, once per switch, when the plan says the weights fit in the
 * RAM available: the new unit's load then reads memory, not disk. A preload that fails or runs out of
 * time only costs speed: the swap goes on and the thread says so.
 */
export async function preload(ctx: Pick<StageContext, "clock" | "emit" | "host" | "swap">): Promise<void> {
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
    if (passesThrough(error)) throw error;
    detail = asCodedError(error).message.slice(0, 200);
  }
  const seconds = (clock.now() - began) / 1000;
  swap.to.preloaded({ ok, seconds, detail });
  ctx.emit({ type: "preloaded", ok, seconds, detail });
  await swap.checkpoint();
}
