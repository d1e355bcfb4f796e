import type { Clock } from "../clock.ts";
import type { Logger } from "../log.ts";
import type { Store } from "../store/store.ts";
import type { Decision } from "../swap/swap-record.ts";

/** What the approval gate's decisions need, and what they answer (src/approval/decide.ts, decide-rollout.ts). */

export interface DecideDeps {
  store: Pick<Store, "swaps" | "approvals" | "rollouts">;
  /**
   * Whether the user is an approver at the moment of the decision (user groups asked again then). Throws
   * a coded error when that cannot be known (SLACK_GROUP_UNAVAILABLE): the decision then counts for nothing.
   */
  isApprover(user: string): Promise<boolean>;
  /** `approvals.allowSelfApproval` as it is now (the config may be reloaded). */
  allowSelfApproval(): boolean;
  /** Wakes the swap's parked job, so it acts on the decision at once. */
  wake(swapId: string): Promise<void>;
  /** Asks the reporter to show the decision on the plan message. */
  reportSoon(swapId: string): Promise<void>;
  /**
   * Whether two identities are one person (an operator and the Slack member id the config gives them):
   * nobody approves their own swap under another name. Unset: only the same id is the same person.
   */
  sameAs?(a: string, b: string): boolean;
  /** Says something to one person, privately (an ephemeral message). */
  tell(user: string, text: string): Promise<void>;
  log: Logger;
  clock: Clock;
}

/** A decision on the plan with `planHash` of swap `swapId`, wherever it was given (Slack, the CLI, the API). */
export interface PlanDecision {
  swapId: string;
  /** The plan the decider saw: it counts only while that is the swap's current plan. */
  planHash: string;
  user: string;
  approved: boolean;
  via: Decision["via"];
}

/** Why a decision did not count (the code is the HTTP API's), or the decision that now stands. */
export type DecisionResult =
  | { ok: true; decision: Decision }
  | {
      ok: false;
      code:
        | "SWAP_NOT_FOUND"
        | "IN_ROLLOUT"
        | "NOT_WAITING"
        | "PLAN_CHANGED"
        | "APPROVER_UNCHECKED"
        | "NOT_APPROVER"
        | "OWN_SWAP"
        | "APPROVAL_EXPIRED"
        | "ALREADY_DECIDED";
      text: string;
      /** Nothing worth telling (a repeat of what this person decided). */
      quiet?: boolean;
    };

/** What the gate's rules read of what is decided on: a swap (decide.ts) or a rollout (decide-rollout.ts). */
export interface DecisionSubject {
  noun: "swap" | "rollout";
  id: string;
  requester: string;
  /** The swap's host (in the audit entry); a rollout has many. */
  host?: string;
  /** Its current plan, and the end of that plan's window. */
  planHash: string | undefined;
  expiresAt: string | undefined;
  /** The decision it took, if any (a repeat of it is not said again). */
  decision: Decision | undefined;
  /** Undefined while it waits for a decision; else why not, after its name ("is not waiting … yet: …"). */
  notWaiting: string | undefined;
  /** Why a plan of it is replaced, as the refusal says it. */
  replacedBecause: string;
  auditDetail(approved: boolean, via: Decision["via"]): string;
}
