import type { SwapRecord } from "../../src/swap/swap-record.ts";

/**
 * What a step tells the state machine: go on to the next step, wait (the job parks itself and no worker
 * slot is held), or end. `touched: false` means the host was not changed (no rollback needed).
 */
export type StepResult =
  | { next: SwapRecord["step"] }
  | { wait: number }
  | { fail: string; touched: boolean }
  | { end: NonNullable<SwapRecord["outcome"]>; reason?: string };
