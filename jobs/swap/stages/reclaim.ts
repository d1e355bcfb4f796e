import type { RetentionConfig } from "../../../src/config/retention-schema.ts";
import { asCodedError, isRunOver } from "../../../src/errors.ts";
import { formatGB } from "../../../src/plan/byte-units.ts";
import { collectGarbage, freedBytes } from "../../../src/retention/collect-garbage.ts";
import { gcTarget } from "../../../src/retention/gc-target.ts";
import type { StageContext } from "../../../src/swap/stage-context.ts";
import { EVENT_LOG_LINES } from "../../../src/swap/swap-events.ts";
import type { SwapOutcome } from "../../../src/swap/swap-record.ts";

/**
 * Disk retention at a swap's end (retention.afterSwap): once the swap has ended with a host that serves
 * (succeeded, or rolled back) and its flip-back window is over, and while it still holds its host and its
 * lease, what retention lets go is deleted under the swap's own fence. Both of the swap's units (the one
 * that serves and the one before) are kept whatever their age. It never changes the outcome: a failure
 * is said in the thread (and logged); only the end of this run (the fence refused it) is thrown on.
 */
export async function reclaimAfterSwap(
  ctx: Pick<StageContext, "swap" | "host" | "emit" | "log">,
  retention: RetentionConfig,
  outcome: SwapOutcome,
): Promise<void> {
  const { record } = ctx.swap;
  if (!retention.afterSwap || record.request.dryRun || record.switch === undefined) return;
  if (outcome !== "succeeded" && outcome !== "rolled_back") return;
  await reclaim(ctx, retention);
}

/** The gc of this swap's host, keeping what the swap itself uses: its units, its model files, its engine build. */
function swapTarget(ctx: Pick<StageContext, "swap" | "host">, retention: RetentionConfig) {
  const { record } = ctx.swap;
  const target = gcTarget(ctx.host.config, retention, undefined);
  const units = [record.plan?.unitName, record.previous?.unit].filter((u): u is string => u !== undefined);
  const paths = [record.plan?.modelDir, record.plan?.engine?.buildDir].filter(
    (p): p is string => p !== undefined,
  );
  target.rules = {
    ...target.rules,
    serving: [...target.rules.serving, ...units],
    pinned: [...target.rules.pinned, ...paths],
  };
  return target;
}

/**
 * What disk retention would free on the swap's host now (0 when it cannot be read: the plan then says the
 * disk is short, as it would without retention).
 */
export async function reclaimableBytes(
  ctx: Pick<StageContext, "swap" | "host" | "log">,
  retention: RetentionConfig,
): Promise<number> {
  try {
    const reader = { hostName: ctx.host.name, exec: ctx.host.exec };
    return (await collectGarbage(reader, undefined, swapTarget(ctx, retention), true)).plan.reclaimableBytes;
  } catch (error) {
    ctx.log.warn({ err: asCodedError(error).message }, "could not read what disk retention would free");
    return 0;
  }
}

/**
 * A plan whose disk check passes only with disk retention's room (reclaimFirst): the download waits for
 * the approval, then retention deletes what it may (under the swap's fence) and the download starts.
 * True while the download must wait.
 */
export async function reclaimBeforeDownload(
  ctx: Pick<StageContext, "swap" | "host" | "emit" | "log" | "settings">,
): Promise<boolean> {
  const { record } = ctx.swap;
  const disk = record.plan?.checks.find((c) => c.id === "disk");
  if (disk?.reclaimFirst !== true || record.tasks.download !== undefined) return false;
  if (record.decision?.approved !== true) {
    if (record.stages.download.detail === undefined)
      ctx.swap.stage("download", "pending", "starts after approval: disk retention makes room first");
    return true;
  }
  await reclaim(ctx, ctx.settings.retention ?? { keep: 2, pinned: [], afterSwap: true });
  return false;
}

async function reclaim(
  ctx: Pick<StageContext, "swap" | "host" | "emit" | "log">,
  retention: RetentionConfig,
): Promise<void> {
  const target = swapTarget(ctx, retention);
  const reader = { hostName: ctx.host.name, exec: ctx.host.exec };
  const fenced = { hostName: ctx.host.name, exec: ctx.host.tryChange };
  try {
    const report = await collectGarbage(reader, fenced, target, false);
    const deleted = report.outcomes.filter((o) => o.result === "deleted").map((o) => o.path);
    ctx.emit({
      type: "disk-reclaimed",
      deleted: deleted.slice(-EVENT_LOG_LINES).map((p) => p.slice(-300)),
      deletedCount: deleted.length,
      freedBytes: freedBytes(report),
      kept: report.plan.keep.length,
    });
    if (deleted.length > 0)
      ctx.swap.audit(
        "gc",
        `deleted ${deleted.length} old entries, freed ${formatGB(freedBytes(report))} (df)`,
      );
    ctx.log.info({ deleted: deleted.length, freed: freedBytes(report) }, "disk retention after the swap");
  } catch (error) {
    if (isRunOver(error)) throw error;
    const coded = asCodedError(error);
    ctx.log.warn({ code: coded.code, err: coded.message }, "disk retention after the swap failed");
    ctx.emit({
      type: "disk-reclaimed",
      deleted: [],
      deletedCount: 0,
      freedBytes: 0,
      kept: 0,
      error: `${coded.message} (${coded.fix ?? "run /llm gc later"})`.slice(0, 300),
    });
  }
}
