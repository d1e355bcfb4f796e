import type { Config } from "../config/load-config.ts";
import type { CommandQueue } from "../queue/command-queue.ts";
import type { ReportQueue } from "../queue/report-queue.ts";
import type { SwapQueue } from "../queue/swap-queue.ts";
import type { SlackMessage } from "../reporter/message.ts";
import type { Store } from "../store/store.ts";
import type { AccessControl } from "./access-control.ts";

/** One `/llm <sub-command>` request, as Slack delivered it (all of it untrusted). */
export interface CommandRequest {
  user: string;
  channel: string;
  /** The words after the sub-command. */
  args: string[];
}

export interface CommandDeps {
  config: Config;
  access: AccessControl;
  queue: CommandQueue;
  swaps: SwapQueue;
  /** Swap records, host locks, the audit stream (requests are written to it). */
  store: Store;
  /** Asks the reporter to post a new swap's card now, whether or not a worker has taken the swap yet. */
  reports: Pick<ReportQueue, "soon">;
}

/**
 * A sub-command validates its arguments, authorizes the user, enqueues work, and returns the ephemeral
 * acknowledgement. It never waits on a host.
 */
export interface SubCommand {
  name: string;
  usage: string;
  summary: string;
  handle(request: CommandRequest, deps: CommandDeps): Promise<SlackMessage>;
}
