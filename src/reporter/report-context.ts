import type { Clock } from "../clock.ts";
import type { Logger } from "../log.ts";
import type { SlackPoster } from "../slack/slack-poster.ts";
import type { ReportState } from "../store/report-state.ts";
import type { Store } from "../store/store.ts";
import type { SwapRecord } from "../swap/swap-record.ts";

export interface ReporterDeps {
  store: Pick<Store, "swaps" | "reports" | "approvals" | "rollouts">;
  poster: Pick<
    SlackPoster,
    | "post"
    | "update"
    | "react"
    | "unreact"
    | "upload"
    | "read"
    | "postBacklog"
    | "updateBacklog"
    | "unreactBacklog"
    | "hurry"
    | "permalink"
  >;
  /** At most one progress edit of a card per this many seconds (a stage change is shown at once). */
  cardUpdateSeconds: number;
  /** Who may approve, as mentions (approversMention), for the plan's first line. */
  approvers?: string;
  log: Logger;
  clock: Clock;
}

/** One report run of one swap, as its card and thread see it: the record read, and the state to save. */
export interface ReportContext {
  readonly swapId: string;
  readonly record: SwapRecord;
  readonly state: ReportState;
  readonly deps: ReporterDeps;
  readonly log: Logger;
  /** Saves `state` (after every post, so a reporter that dies never posts it twice). */
  save(): Promise<void>;
  /** The swap has its outcome: what is left to say is how it ended, and nobody should wait for it. */
  ended(): boolean;
}

/**
 * Done for now, or look again: in `ms` (Slack refused: back off; or the card's next edit is due then), or
 * at once but after the looks someone waits for (`turn`: the run posted once in a busy channel and gave
 * its reporter back; `ended` says whether it was an ended swap's, whose turns go before running swaps').
 */
export type ReportResult =
  | { kind: "done" }
  | { kind: "later"; ms: number; why: "slack" | "card" }
  | { kind: "turn"; ended: boolean };
