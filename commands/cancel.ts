import { isSwapId, SWAP_ID_EXAMPLE } from "../src/grammar/swap-id.ts";
import { echo, failure, refusal, reply } from "../src/slack/reply.ts";
import type { SubCommand } from "../src/slack/sub-command.ts";

/**
 * `/llm cancel [swap-id]`: before the switch the swap stops (detached download and build ended, files
 * kept); after it, the old service is put back as for a failed swap. The requester or an approver may
 * cancel. Without an id: the caller's one active swap.
 */
export const cancelCommand: SubCommand = {
  name: "cancel",
  usage: "/llm cancel [swap-id]",
  summary: "stop a swap (before the switch: files kept; after it: rolled back)",
  async handle(request, { config, access, store, swaps }) {
    if (!(await access.isMember(request.user))) {
      return refusal(
        "You are not allowed to use modelswap. Ask an admin to add you to the requesters or approvers.",
      );
    }
    if (request.args.length > 1) return reply(`Usage: \`${cancelCommand.usage}\``);
    const active = (
      await Promise.all(config.file.hosts.map(async (h) => await store.locks.hostHolder(h.name)))
    ).filter((id): id is string => id !== undefined);
    let id = request.args[0];
    if (id === undefined) {
      const mine = [];
      for (const candidate of active) {
        if ((await store.swaps.get(candidate).catch(() => undefined))?.requester === request.user)
          mine.push(candidate);
      }
      if (mine.length !== 1) {
        const list = active.length === 0 ? "none" : active.map((a) => `\`${a}\``).join(", ");
        return reply(
          `${mine.length === 0 ? "You have no active swap" : "You have several active swaps"}: name one, \`${cancelCommand.usage}\`. Active swaps: ${list}.`,
        );
      }
      id = mine[0]!;
    }
    if (!isSwapId(id)) {
      return reply(
        `${echo(id)} is not a swap id (they look like \`${SWAP_ID_EXAMPLE}\`). Active swaps: ${active.join(", ") || "none"}.`,
      );
    }
    const record = await store.swaps.get(id);
    if (record === undefined)
      return reply(`No swap ${echo(id)}. Active swaps: ${active.join(", ") || "none"}.`);
    if (record.outcome !== undefined) {
      return reply(
        `Swap \`${id}\` already finished: ${record.outcome.replace("_", " ")}. Nothing to cancel.`,
      );
    }
    if (record.requester !== request.user && !(await access.isApprover(request.user))) {
      return refusal(
        `Only <@${record.requester}>, who requested swap \`${id}\`, or an approver may cancel it.`,
      );
    }
    try {
      const first = await store.approvals.requestCancel(id, request.user);
      await swaps.wake(id);
      if (!first) return reply(`Swap \`${id}\` is already being cancelled.`);
    } catch (error) {
      return failure(error);
    }
    const after = record.switch !== undefined;
    return reply(
      `✋ Cancelling swap \`${id}\` on *${record.host}*${after ? ": the switch has happened, so the old service will be put back" : "; downloaded files are kept"}. Follow its card.`,
    );
  },
};
