import { person } from "../src/grammar/person.ts";
import { accepted, failure, refusal, reply } from "../src/slack/reply.ts";
import type { CommandAnswer, CommandDeps } from "../src/slack/sub-command.ts";

/**
 * `/llm cancel <rollout-id>`: the rollout stops before its next host starts. Hosts whose wave has not
 * started are never touched (their swaps end before the switch, files kept); a host already switching
 * finishes its own swap, with its checks and its own rollback. Its requester or an approver may.
 */
export async function cancelRollout(
  id: string,
  user: string,
  { access, store, swaps }: Pick<CommandDeps, "access" | "store" | "swaps">,
): Promise<CommandAnswer> {
  const record = await store.rollouts.get(id).catch(() => undefined);
  if (record === undefined) return reply(`No rollout \`${id}\`.`);
  if (record.outcome !== undefined)
    return reply(`Rollout \`${id}\` already ended: ${record.outcome}. Nothing to cancel.`);
  if (record.requester !== user && !(await access.isApprover(user)))
    return refusal(
      `Only ${person(record.requester) ?? "its requester"}, who requested rollout \`${id}\`, or an approver may cancel it.`,
    );
  try {
    const first = await store.approvals.requestCancel(id, user);
    await swaps.wake(id);
    if (!first) return accepted(`Rollout \`${id}\` is already being cancelled.`, id);
  } catch (error) {
    return failure(error);
  }
  const switching = record.hosts.filter((h) => h.releasedAt !== undefined).length;
  return accepted(
    `✋ Cancelling rollout \`${id}\`: no host whose wave has not started will be touched (their swaps end before the switch, files kept)${switching === 0 ? "" : `; the ${switching} host${switching === 1 ? "" : "s"} already started finish their own swaps, with their checks`}. Follow its card.`,
    id,
  );
}
