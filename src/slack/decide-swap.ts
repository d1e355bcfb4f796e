import type { AuditLog } from "../audit/audit-log.ts";
import type { Config } from "../config/load-config.ts";
import type { Logger } from "../log.ts";
import type { SwapQueue } from "../queue/swap-queue.ts";
import { renderPlan } from "../reporter/plan-message.ts";
import type { SlackPoster } from "../reporter/slack-poster.ts";
import type { SwapStore } from "../swap/swap-store.ts";
import type { AccessControl } from "./access-control.ts";
import { reply } from "./reply.ts";

export interface DecisionDeps {
  config: Config;
  store: SwapStore;
  access: AccessControl;
  swaps: SwapQueue;
  poster: SlackPoster;
  /** Recorded decisions are written to the audit stream. */
  audit: AuditLog;
  log: Logger;
}

export interface DecisionInput {
  swapId: string;
  user: string;
  approved: boolean;
  via: "reaction" | "button";
}

/**
 * An approver's ✅/❌ (reaction or button) on a plan. Only approvers count; the requester cannot approve
 * their own swap unless the config allows it; the first decision on a plan stands (Slack retries, double
 * clicks and re-added reactions change nothing); a decision is tied to the plan it saw. The worker is
 * woken at once. People who cannot decide are told why, privately.
 */
export async function decideSwap(input: DecisionInput, deps: DecisionDeps): Promise<void> {
  const { store, access, config, poster, log } = deps;
  const record = await store.get(input.swapId);
  const tell = (text: string) =>
    poster.ephemeral(config.file.slack.channel, input.user, reply(text)).catch(() => undefined);
  if (record === undefined || record.planHash === undefined) return;
  if (record.step !== "prepare" || record.outcome !== undefined) {
    if (record.decision === undefined || record.decision.by !== input.user) {
      await tell(
        `Swap \`${record.id}\` is not waiting for a decision any more (${record.outcome ?? record.step}).`,
      );
    }
    return;
  }
  if (!(await access.isApprover(input.user))) {
    await tell("Only approvers can approve or reject swaps.");
    return;
  }
  if (input.approved && input.user === record.requester && !config.file.approvals.allowSelfApproval) {
    await tell("You requested this swap, so another approver has to approve it.");
    return;
  }
  if (record.approvalExpiresAt !== undefined && Date.now() > Date.parse(record.approvalExpiresAt)) {
    await tell(`The approval window of swap \`${record.id}\` has closed.`);
    return;
  }
  const { recorded, decision } = await store.decide(record.id, {
    approved: input.approved,
    by: input.user,
    at: new Date().toISOString(),
    planHash: record.planHash,
    via: input.via,
  });
  if (!recorded) {
    if (decision.by !== input.user) {
      await tell(
        `Swap \`${record.id}\` is already ${decision.approved ? "approved" : "rejected"} by <@${decision.by}>.`,
      );
    }
    return;
  }
  log.info(
    { swap: record.id, host: record.host, by: input.user, approved: input.approved, via: input.via },
    "swap decision recorded",
  );
  await deps.audit
    .record({
      at: decision.at,
      kind: input.approved ? "approval" : "rejection",
      who: input.user,
      host: record.host,
      swap: record.id,
      detail: `${input.approved ? "approved" : "rejected"} ${record.request.model.repo}${record.plan === undefined ? "" : `@${record.plan.model.sha.slice(0, 7)}`} by ${input.via}`,
    })
    .catch((error: unknown) =>
      log.error(
        { swap: record.id, err: (error as Error).message },
        "could not write the decision to the audit stream",
      ),
    );
  if (record.planTs !== undefined && record.plan !== undefined) {
    await poster
      .update(
        record.channel,
        record.planTs,
        renderPlan(record.plan, {
          swapId: record.id,
          requester: record.requester,
          status: input.approved ? "approved" : "rejected",
          decidedBy: input.user,
        }),
      )
      .catch((error: unknown) =>
        log.warn({ err: (error as Error).message }, "could not update the plan message"),
      );
  }
  await deps.swaps.wake(record.id);
}
