import type { AuditLog } from "../audit/audit-log.ts";
import type { Config } from "../config/load-config.ts";
import type { CommandQueue } from "../queue/command-queue.ts";
import type { SwapQueue } from "../queue/swap-queue.ts";
import type { SlackMessage } from "../reporter/message.ts";
import type { SwapStore } from "../swap/swap-store.ts";
import type { AccessControl } from "./access-control.ts";

/** One `/llm <sub-command>` request, as Slack delivered it (all of it untrusted). */
export interface CommandRequest {
  user: string;
  channel: string;
  responseUrl: string;
  /** The words after the sub-command. */
  args: string[];
}

export interface CommandDeps {
  config: Config;
  access: AccessControl;
  queue: CommandQueue;
  swaps: SwapQueue;
  store: SwapStore;
  /** The audit stream: requests are written to it. */
  audit: AuditLog;
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
