import { stopTimeoutSeconds } from "../../../src/engine/render-unit.ts";
import { unitCommands } from "../../../src/engine/unit-commands.ts";
import { sh } from "../../../src/host/shell-quote.ts";
import type { StageContext } from "../../../src/swap/stage-context.ts";

/*
 * The unit steps every switch shares, cold or blue/green: marking the switch begun, installing the new
 * unit, how long a unit's stop may take, and the old unit's stop.
 */

/** A unit's main process as systemd knows it (0: none). */
export async function mainPid(ctx: Pick<StageContext, "host">, unit: string): Promise<number> {
  const result = await ctx.host.exec(sh`systemctl show -p MainPID --value ${unit}`);
  return Number(result.stdout.trim()) || 0;
}

/**
 * Marks the switch begun, once: after reaching the host (a host that is away, or that presents another
 * host key, fails or waits here with the old service untouched, and needs no rollback), with the old
 * unit's process (the new unit must be served by another). `beside`: a blue/green start.
 */
export async function beginSwitch(ctx: Pick<StageContext, "host" | "swap">, beside?: true): Promise<void> {
  const { swap, host } = ctx;
  if (swap.record.switch !== undefined) return;
  const plan = swap.record.plan!;
  await host.must(sh`true`, "reaching the host");
  const oldMainPid = plan.host.currentUnit.exists ? await mainPid(ctx, swap.record.previous!.unit) : 0;
  swap.to.switchBegun(oldMainPid, beside === true);
  await swap.checkpoint();
}

/**
 * Writes the new unit's file (the plan's, or `text`: its restart at full memory) and reloads systemd
 * (both idempotent).
 */
export async function installUnit(ctx: Pick<StageContext, "host" | "swap">, text?: string): Promise<void> {
  const { host } = ctx;
  const plan = ctx.swap.record.plan!;
  await host.change(
    sh`${unitCommands.writeUnit(host.config.unitDir, plan.unitName)} > /dev/null`,
    `writing ${plan.unitName}`,
    { stdin: text ?? plan.unitText, privileged: true },
  );
  await host.change(unitCommands.daemonReload(), "systemctl daemon-reload", { privileged: true });
}

/**
 * The limit of a command that stops a unit: its TimeoutStopSec (SGLang drains on SIGTERM, for up to
 * that) and 30 s more, longer than a command's usual limit.
 */
export function stopLimitMs(unitText: string): number {
  return (stopTimeoutSeconds(unitText) + 30) * 1000;
}

/**
 * `disable --now` of the unit that served before the swap, bounded by its own TimeoutStopSec (its drain):
 * the cold switch's stop, a blue/green window's end, and a parked unit stopped or reloaded.
 */
export async function stopOldUnit(ctx: Pick<StageContext, "host" | "swap">): Promise<void> {
  const unit = ctx.swap.record.previous!.unit;
  await ctx.host.change(unitCommands.disableNow(unit), `stopping ${unit}`, {
    privileged: true,
    timeoutMs: stopLimitMs(ctx.swap.record.plan!.host.currentUnit.text),
  });
}
