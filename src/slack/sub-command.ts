import type { Config } from "../config/load-config.ts";
import type { CommandQueue } from "../queue/command-queue.ts";
import type { ReportQueue } from "../queue/report-queue.ts";
import type { SwapQueue } from "../queue/swap-queue.ts";
import type { Store } from "../store/store.ts";
import type { AccessControl } from "./access-control.ts";
import type { SlackMessage } from "./blocks.ts";

/** One `/llm <sub-command>` request, as Slack delivered it, or the CLI and the HTTP API (all of it untrusted). */
export interface CommandRequest {
  /** A Slack user id, or `operator:<name>` for the CLI and the HTTP API (src/http/ops-api.ts). */
  user: string;
  channel: string;
  /** The words after the sub-command. */
  args: string[];
}

export interface CommandDeps {
  config: Config;
  /** Who may do what: Slack's requesters and approvers, or an operator's scopes (the CLI, the HTTP API). */
  access: Pick<AccessControl, "isRequester" | "isApprover" | "isMember">;
  queue: CommandQueue;
  swaps: SwapQueue;
  /** Swap records, host locks, the audit stream (requests are written to it). */
  store: Store;
  /** Asks the reporter to post a new swap's card now, whether or not a worker has taken the swap yet. */
  reports: Pick<ReportQueue, "soon">;
}

/**
 * What a sub-command answers: the ephemeral message, and for the CLI and the HTTP API what became of the
 * request. Without an outcome, the request was answered without acting (bad input, nothing to do).
 */
export interface CommandAnswer extends SlackMessage {
  /**
   * `accepted`: queued or asked (a swap, a rollback, a cancel); `refused`: the user may not; `busy`:
   * another swap holds the host; `failed`: it could not be done now (Redis away), `code` says why.
   */
  outcome?: "accepted" | "refused" | "busy" | "failed";
  /** The swap the request made or acted on. */
  swap?: string;
  /** For `failed`: the error's code and fix. */
  code?: string;
  fix?: string;
}

/**
 * A sub-command validates its arguments, authorizes the user, enqueues work, and returns the ephemeral
 * acknowledgement. It never waits on a host.
 */
export interface SubCommand {
  name: string;
  usage: string;
  summary: string;
  handle(request: CommandRequest, deps: CommandDeps): Promise<CommandAnswer>;
}
