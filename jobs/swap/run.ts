import { systemClock } from "../../src/clock.ts";
import { asCodedError } from "../../src/errors.ts";
import { duration } from "../../src/format-duration.ts";
import type { StageContext } from "../../src/swap/stage-context.ts";
import type { SwapDeps } from "./create-stage-context.ts";
import type { Finished } from "./stages/finish.ts";
import type { RunningSwap } from "./swap-state.ts";

/** One advance of one swap: its context, and the save that persists what its stages did. */
export interface Run {
  ctx: StageContext;
  swap: RunningSwap;
  save(finished?: Finished): Promise<void>;
}

/** Notes one more failed try to reach the host; the backoff before the next, or undefined once out of time. */
export function retryLater(run: Run, deps: SwapDeps, error: unknown): number | undefined {
  const { swap } = run;
  const now = (deps.clock ?? systemClock).now();
  const before = swap.record.hostTrouble ?? { since: new Date(now).toISOString(), tries: 0, last: "" };
  const trouble = { ...before, tries: before.tries + 1, last: asCodedError(error).message };
  swap.set({ hostTrouble: trouble });
  const limitMs = deps.config.current().file.swaps.hostRetrySeconds * 1000;
  const elapsed = now - Date.parse(trouble.since);
  if (elapsed >= limitMs) return undefined;
  run.ctx.log.warn(
    { tries: trouble.tries, elapsedMs: elapsed, step: swap.record.step },
    "host unreachable; retrying",
  );
  return Math.min(1000 * 2 ** (trouble.tries - 1), 15_000, Math.max(200, limitMs - elapsed));
}

/** Why a step stopped trying to reach the host: for how long and how often it tried, and the last error. */
export function gaveUp(run: Run, deps: SwapDeps, error: unknown): string {
  const { record } = run.swap;
  const now = (deps.clock ?? systemClock).now();
  const trouble = record.hostTrouble;
  const seconds = trouble === undefined ? 0 : Math.round((now - Date.parse(trouble.since)) / 1000);
  const coded = asCodedError(error);
  return `${record.host} could not be reached for ${duration(seconds)} (${trouble?.tries ?? 1} tries; swaps.hostRetrySeconds is ${deps.config.current().file.swaps.hostRetrySeconds}): ${coded.message} (${coded.code}). Fix: ${coded.fix}`;
}
