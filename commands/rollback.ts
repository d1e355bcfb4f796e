import { utcTime } from "../src/format-duration.ts";
import { optionWord } from "../src/grammar/option-word.ts";
import { person } from "../src/grammar/person.ts";
import { newSwapId } from "../src/grammar/swap-id.ts";
import { queueSwap } from "../src/queue/queue-swap.ts";
import { accepted, busy, failure, refusal, reply } from "../src/slack/reply.ts";
import type { CommandAnswer, CommandDeps, SubCommand } from "../src/slack/sub-command.ts";
import { rollbackRecord } from "../src/store/rollback-record.ts";
import { inFlipBackWindow } from "../src/swap/flip-back.ts";
import type { SwapRecord } from "../src/swap/swap-record.ts";
import { knownHosts, knownHostsLine, refuseUnknownHost } from "./host-arg.ts";
import { rollbackRollout } from "./rollback-rollout.ts";
import { takeHost } from "./take-host.ts";

/**
 * `/llm rollback [host]`: a swap back to the unit that served before the last swap — its unit file and
 * model files are still on the host, so the plan goes straight to approval, then switch, health, sanity
 * and benchmark like any swap. While a blue/green swap of the host is in its flip-back window, the old
 * unit is still loaded: the rollback is then that swap's cancel, a flip back in about a second. After a
 * swap that loaded a new revision in place (the same unit serves it), the rollback is a swap to the
 * revision before, loaded in place again.
 */
export const rollbackCommand: SubCommand = {
  name: "rollback",
  usage: "/llm rollback [host | --rollout ROLLOUT-ID]",
  summary: "go back to the model a host served before its last swap (needs approval like a swap)",
  async handle(request, { config, access, store, swaps, reports }) {
    const notRequester = () =>
      refusal(
        "Only requesters may start a rollback. Ask an admin to add you to the requesters in the config. (An approver may flip back a blue/green swap in its flip-back window.)",
      );
    const requester = await access.isRequester(request.user);
    // an approver gets this far only to flip back a swap in its window (below); anyone else is refused
    if (!requester && !(await access.isApprover(request.user))) return notRequester();
    const first = request.args[0] === undefined ? undefined : optionWord(request.args[0]);
    if (first?.name === "--rollout") {
      if (!requester) return notRequester();
      if (request.args.length > (first.inline === undefined ? 2 : 1))
        return reply(`Usage: \`${rollbackCommand.usage}\``);
      return await rollbackRollout(first.inline ?? request.args[1], request.user, {
        config,
        store,
        swaps,
        reports,
      });
    }
    const known = knownHosts(config);
    const host = request.args[0] ?? (known.length === 1 ? known[0] : undefined);
    if (request.args.length > 1 || host === undefined || refuseUnknownHost(host, known) !== undefined) {
      if (!requester) return notRequester();
      if (request.args.length > 1)
        return reply(`Usage: \`${rollbackCommand.usage}\`. ${knownHostsLine(known)}`);
      if (host === undefined)
        return reply(`Which host? \`${rollbackCommand.usage}\`. ${knownHostsLine(known)}`);
      return reply(refuseUnknownHost(host, known)!);
    }

    const holder = await store.locks.hostHolder(host);
    const running = holder === undefined ? undefined : await store.swaps.get(holder).catch(() => undefined);
    if (running !== undefined && inFlipBackWindow(running))
      return await flipBack(running, request.user, { access, store, swaps });
    if (!requester) return notRequester();

    const id = newSwapId();
    const target = await rollbackRecord(
      { id, host, requester: request.user, channel: config.file.slack.channel },
      store,
    );
    if (!target.ok) return reply(target.why);
    const taken = await takeHost(host, id, { store, swaps });
    if (!taken.ok) return "error" in taken ? failure(taken.error) : busy(taken.busy);
    const note = taken.note === undefined ? "" : `\n${taken.note}`;
    try {
      await queueSwap(target.record, target.detail, { store, swaps, reports }, true);
    } catch (error) {
      return failure(error);
    }
    if (target.inPlace !== undefined)
      return accepted(
        `↩️ Rollback queued: *${host}* back to \`${target.inPlace.model}\`, the revision \`${target.inPlace.unit}\` served before its weights were loaded in place (swap \`${id}\`). An approver's ✅ on its plan starts it.${note}`,
        id,
      );
    return accepted(
      `↩️ Rollback queued: *${host}* back to \`${target.unit}\` (swap \`${id}\`). An approver's ✅ on its plan starts it.${note}`,
      id,
    );
  },
};

/**
 * `/llm rollback` of a host whose blue/green swap is in its flip-back window: that swap is cancelled,
 * which flips the front door back to the old unit, still loaded (no approval: nothing new runs). Only
 * its requester or an approver may, as for `/llm cancel`.
 */
async function flipBack(
  record: SwapRecord,
  user: string,
  { access, store, swaps }: Pick<CommandDeps, "access" | "store" | "swaps">,
): Promise<CommandAnswer> {
  const old = record.previous?.unit ?? "the old unit";
  if (record.requester !== user && !(await access.isApprover(user))) {
    return refusal(
      `*${record.host}* is in the flip-back window of swap \`${record.id}\`: a rollback now flips it back to \`${old}\` at once, without approval, so only ${person(record.requester) ?? "its requester"}, who requested it, or an approver may. Ask them, or an approver.`,
    );
  }
  try {
    const first = await store.approvals.requestCancel(record.id, user);
    await swaps.wake(record.id);
    if (!first)
      return accepted(`Swap \`${record.id}\` is already being cancelled: follow its card.`, record.id);
  } catch (error) {
    return failure(error);
  }
  const flip = record.flip!;
  const seconds = record.plan?.clients?.blueGreen?.flipBackSeconds;
  const until =
    seconds === undefined ? "" : ` (until ${utcTime(new Date(Date.parse(flip.flippedAt) + seconds * 1000))})`;
  return accepted(
    `↩️ Flipping *${record.host}* back to \`${old}\`: swap \`${record.id}\` is in its flip-back window${until}, so the old model, still loaded, takes new requests again in about a second, once a check finds it still serves (if it does not, the new model keeps serving and the card says why). No approval is needed: nothing new runs. Follow its card.`,
    record.id,
  );
}
