import { duration } from "../../../src/format-duration.ts";
import type { LastBenchmark, ServingState } from "../../../src/swap/host-serving.ts";
import type { StageContext } from "../../../src/swap/stage-context.ts";
import type { SwapOutcome } from "../../../src/swap/swap-record.ts";
import { newUnitPort } from "../../../src/swap/unit-ports.ts";

/** What the swap's final save writes besides its record: what the host serves now, and its benchmark. */
export interface Finished {
  serving?: ServingState;
  benchmark?: LastBenchmark;
}

/**
 * Stage 11: record the outcome, audit it, and say it. The run's final save writes it together with what the host serves
 * now and the host's release, in one transaction; the reporter broadcasts the outcome.
 */
export async function finishSwap(
  ctx: Pick<StageContext, "emit" | "host" | "log" | "swap">,
  outcome: SwapOutcome,
  reason?: string,
): Promise<Finished> {
  const { swap } = ctx;
  swap.to.finished(outcome);
  if (reason !== undefined) swap.set({ reason });
  ctx.log.info({ outcome, reason: swap.record.reason }, "swap finished");
  swap.stage(
    "finish",
    outcome === "succeeded" || outcome === "planned" ? "done" : "failed",
    outcome.replace("_", " "),
  );
  for (const name of Object.keys(swap.record.stages) as (keyof typeof swap.record.stages)[]) {
    if (swap.record.stages[name].state === "running") swap.stage(name, "skipped");
  }
  auditOutcome(ctx, outcome);
  ctx.emit({ type: "finished", outcome });
  const { record } = swap;
  const plan = record.plan;
  // a blue/green swap that failed after its old unit stopped (its restart at full memory) leaves the new
  // unit installed in its place: the ledger says so, whether it serves or not
  const replaced = outcome === "succeeded" || record.flip?.retiredAt !== undefined;
  if (!replaced || plan === undefined) return {};
  const port = newUnitPort(plan, ctx.host.config.servingPort);
  return {
    serving: {
      unit: plan.unitName,
      repo: plan.model.repo,
      sha: plan.model.sha,
      modelDir: plan.modelDir,
      since: record.healthyAt ?? record.finishedAt!,
      swapId: record.id,
      ...(port === ctx.host.config.servingPort ? {} : { port }),
      engine: plan.engineKind,
      ...(record.previous === undefined ? {} : { previous: record.previous }),
    },
    ...(record.benchmark === undefined
      ? {}
      : {
          benchmark: {
            repo: plan.model.repo,
            engine: plan.engineKind,
            result: record.benchmark,
          },
        }),
  };
}

/** The rollback (when there was one), an expiry, and the outcome, for the audit stream (written by the save). */
function auditOutcome(ctx: Pick<StageContext, "swap">, outcome: SwapOutcome): void {
  const { swap } = ctx;
  const { record } = swap;
  const model = `${record.request.model.repo}${record.plan ? `@${record.plan.model.sha.slice(0, 7)}` : ""}`;
  const why = record.reason === undefined ? "" : ` — ${record.reason}`;
  if (record.rollback !== undefined)
    swap.audit(
      "rollback",
      `${record.rollback.ok ? "rolled back" : "rollback failed"} to ${record.previous?.unit ?? "?"}: ${record.rollback.detail}`,
    );
  if (outcome === "expired") swap.audit("expiry", `no decision on the plan for ${model}${why}`);
  const downtime =
    record.downtimeSeconds === undefined ? "" : `, downtime ${duration(record.downtimeSeconds)}`;
  swap.audit("outcome", `${outcome}: ${model}${downtime}${why}`);
}
