import { AsyncLocalStorage } from "node:async_hooks";

/**
 * Which pipeline stage the code running now belongs to, carried across awaits (AsyncLocalStorage). The
 * swap worker runs each step inside `inStage`; the Slack client asks `currentStage()` on every call, so a
 * stage that waited on Slack is counted (modelswap_slack_wait_in_stages_seconds_total). By design none
 * does: stages emit events and the reporter alone speaks Slack; the counter is the proof under load, and
 * the alarm if a change ever makes a stage call Slack.
 */
const scope = new AsyncLocalStorage<string>();

export function inStage<T>(stage: string, run: () => Promise<T>): Promise<T> {
  return scope.run(stage, run);
}

export function currentStage(): string | undefined {
  return scope.getStore();
}
