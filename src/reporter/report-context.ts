import type { Clock } from "../clock.ts";
import type { Logger } from "../log.ts";
import type { SlackPoster } from "../slack/slack-poster.ts";
import type { ReportState } from "../store/report-state.ts";
import type { Store } from "../store/store.ts";
import type { SwapRecord } from "../swap/swap-record.ts";

export interface ReporterDeps {
  store: Pick<Store, "swaps" | "reports" | "approvals">;
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
