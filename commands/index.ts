import type { SubCommand } from "../src/slack/sub-command.ts";
import { cancelCommand } from "./cancel.ts";
import { gcCommand } from "./gc.ts";
import { helpCommand } from "./help.ts";
import { historyCommand } from "./history.ts";
import { rollbackCommand } from "./rollback.ts";
import { statusCommand } from "./status.ts";
import { swapCommand } from "./swap.ts";

/** Every `/llm` sub-command, in the order help lists them. */
export function allCommands(): readonly SubCommand[] {
  return COMMANDS;
}

const COMMANDS: readonly SubCommand[] = [
  swapCommand,
  statusCommand,
  historyCommand,
  cancelCommand,
  rollbackCommand,
  gcCommand,
  helpCommand(() => COMMANDS),
];
