import { runSanity } from "../../../src/engine/sanity.ts";
import { unitCommands } from "../../../src/engine/unit-commands.ts";
import { asCodedError, passesThrough } from "../../../src/errors.ts";
import type { HostFrontDoor } from "../../../src/front-door/host-front-door.ts";
import { secondsBetween } from "../../../src/swap/client-impact.ts";
import type { StageContext, StepResult } from "../../../src/swap/stage-context.ts";
import { blueGreenOf } from "./blue-green.ts";
import { installUnit, mainPid, stopLimitMs } from "./unit-steps.ts";
import { waitDrained } from "./wait-drained.ts";
import { waitHealthy } from "./wait-healthy.ts";

/*
 * Blue/green on shared GPUs starts the new unit with the KV cache the old one leaves room for. With
 * swaps.restartAtFullMemory, once the old unit has stopped, the new one restarts at full memory: a cold
 * restart behind the front door, as a cold swap's switch does it (docs/front-door.md). New requests are
 * held and the unit's slot drained; the unit is written without the fraction beside, restarted, checked
 * for health and sanity on its port, and only then are the held requests released to it. A restart that
 * does not serve puts the unit back as it served beside the old one, and releases to it: the swap still
 * ends with the new model, at the smaller KV cache, and the thread says why. Every step is recorded, so a
 * worker killed anywhere here is followed by one that goes on from where it stopped.
 */

/**
 * The restart step. It never rolls back: the old unit has stopped, and the new one served. What stops it
 * (HAProxy away for good, say) ends the swap as failed, saying what is where.
 */
export async function restartStage(ctx: StageContext): Promise<StepResult> {
  try {
    return await restart(ctx);
  } catch (error) {
    // the host away, this process stopping or another run holding the swap: the step runs again later
    if (passesThrough(error)) throw error;
    const plan = ctx.swap.record.plan!;
    return {
      end: "failed",
      reason: `the restart at full memory could not go on (${asCodedError(error).message}); ${plan.unitName} is installed in place of the old unit, which has stopped: see \`/llm status ${ctx.swap.record.host}\` for whether it serves and where the front door sends requests`,
    };
  }
}

async function restart(ctx: StageContext): Promise<StepResult> {
  const { swap, host } = ctx;
  const plan = swap.record.plan!;
  const beside = blueGreenOf(plan)!;
  const fd = host.frontDoor;
  const slot = plan.clients?.frontDoor?.server;
  if (fd === undefined || slot === undefined || beside.restart === undefined)
    throw new Error("a restart at full memory needs the host's front door and the plan's restart unit");
  if (swap.record.restart?.releasedAt !== undefined) return { next: "finish" };
  // hold new requests and drain the unit's slot (again after a crash: both are idempotent)
  await fd.door.setStates([
    [fd.hold, "ready"],
    [slot, "drain"],
  ]);
  if (swap.record.restart === undefined) {
    swap.to.restartHeld();
    ctx.emit({ type: "restarting", unit: plan.unitName, holdSeconds: fd.holdSeconds });
    await swap.checkpoint();
  }
  if (swap.record.restart!.drainedAt === undefined) {
    const deadline = Date.parse(swap.record.restart!.heldAt) + host.config.drainSeconds * 1000;
    const cut = await waitDrained(ctx, fd, slot, deadline);
    swap.to.restartDrained(cut);
    await swap.checkpoint();
  }
  if (swap.record.restart!.failed === undefined) {
    const why = await restartWith(ctx, beside.restart.unitText, beside.port);
    if (why === undefined) return await release(ctx, fd, slot, beside.fullKvPerGpuBytes);
    ctx.log.warn({ why }, "the restart at full memory failed; the unit goes back as it served beside");
    swap.to.restartFailed(why);
    await swap.checkpoint();
  }
  // the unit as it served beside the old unit: it did, so it should again
  const again = await restartWith(ctx, plan.unitText, beside.port);
  if (again === undefined) {
    swap.to.restartReverted();
    await swap.checkpoint();
    return await release(ctx, fd, slot, beside.kvPerGpuBytes);
  }
  return {
    end: "failed",
    reason: `the restart at full memory failed (${swap.record.restart!.failed}), and ${plan.unitName} did not serve again as it did beside the old unit either (${again}): nothing serves on ${swap.record.host}, whose old unit has stopped. The front door holds new requests for up to ${fd.holdSeconds} s, then answers 503`,
  };
}

/**
 * Writes the unit with `unitText`, restarts it (stop, then start: the two commands a swap's sudoers rules
 * allow already) unless this run did, and waits for it to serve sanely on `port`. Undefined when it does;
 * else why not.
 */
async function restartWith(
  ctx: Pick<StageContext, "clock" | "engine" | "host" | "log" | "settings" | "signal" | "swap">,
  unitText: string,
  port: number,
): Promise<string | undefined> {
  const { swap, host } = ctx;
  const plan = swap.record.plan!;
  try {
    if (swap.record.restart!.restartedAt === undefined) {
      await installUnit(ctx, unitText);
      await host.change(unitCommands.disableNow(plan.unitName), `stopping ${plan.unitName}`, {
        privileged: true,
        timeoutMs: stopLimitMs(unitText),
      });
      await host.change(unitCommands.enableNow(plan.unitName), `starting ${plan.unitName}`, {
        privileged: true,
      });
      swap.to.restarted();
      await swap.checkpoint();
    }
    const limit = ctx.settings.healthTimeoutSeconds ?? plan.healthTimeoutSeconds;
    const since = Date.parse(swap.record.restart!.restartedAt!);
    const health = await waitHealthy(ctx, plan.unitName, limit, undefined, since, port);
    if (!health.healthy) return health.why;
    const sanity = await runSanity(ctx.engine, (command, options) => host.exec(command, options), port, {
      timeoutMs: ctx.settings.sanityTimeoutSeconds * 1000,
    });
    if (!sanity.ok) return `sanity: ${sanity.summary}`;
    return undefined;
  } catch (error) {
    if (passesThrough(error)) throw error;
    return asCodedError(error).message;
  }
}

/** The held requests (and every new one) go to the restarted unit: its slot ready, then the hold out. */
async function release(
  ctx: StageContext,
  fd: HostFrontDoor,
  slot: string,
  kvPerGpuBytes: number,
): Promise<StepResult> {
  const { swap } = ctx;
  const unit = swap.record.plan!.unitName;
  // the restarted unit's process is the one the final check expects from now on
  swap.to.verified(unit, await mainPid(ctx, unit));
  await fd.door.setStates([
    [slot, "ready"],
    [fd.hold, "maint"],
  ]);
  swap.to.restartReleased();
  const done = swap.record.restart!;
  ctx.emit({
    type: "restarted",
    unit: swap.record.plan!.unitName,
    heldSeconds: secondsBetween(done.heldAt, done.releasedAt) ?? 0,
    kvPerGpuBytes,
    ...(done.failed === undefined ? {} : { failed: done.failed }),
  });
  return { next: "finish" };
}
