import type { RolloutRecord } from "../rollout/rollout-record.ts";
import type { DecisionSubject } from "./decision-types.ts";

/**
 * A rollout as the approval gate's rules see it (one plan for all its hosts): the same rules as a swap's
 * (src/approval/decide.ts), against the rollout's record. The rollout gives the decision to each host's
 * swap when that host's wave starts.
 */
export function rolloutSubject(record: RolloutRecord): DecisionSubject {
  const waiting = record.step === "approval" && record.outcome === undefined && record.approval !== undefined;
  const hosts = record.hosts.map((h) => h.host).join(", ");
  return {
    noun: "rollout",
    id: record.id,
    requester: record.requester,
    planHash: record.planHash,
    expiresAt: record.approval?.expiresAt,
    decision: record.decision,
    notWaiting: waiting
      ? undefined
      : `is not waiting for a decision${record.outcome === undefined ? (record.decision === undefined ? " yet: its hosts are still planning" : ` any more: it is at wave ${record.wave + 1}`) : ` any more: it ended ${record.outcome}`}`,
    replacedBecause: "a host's plan changed",
    auditDetail: (approved, via) =>
      `${approved ? "approved" : "rejected"} the rollout of ${record.request.model.repo} to ${hosts} by ${via}, requested by ${record.requester}`,
  };
}
