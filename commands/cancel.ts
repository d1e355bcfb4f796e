import { by, person } from "../src/grammar/person.ts";
import { isRolloutId } from "../src/grammar/rollout-id.ts";
import { isSwapId, SWAP_ID_EXAMPLE, swapIdTime } from "../src/grammar/swap-id.ts";
import { clearedLockLine, deadReason, sinceWhen } from "../src/reporter/host-lock-message.ts";
import { accepted, echo, failure, NOT_A_MEMBER, refusal, reply } from "../src/slack/reply.ts";
import type { CommandDeps, SubCommand } from "../src/slack/sub-command.ts";
import {
  checkHostLock,
  clearStuckLock,
  type HeldLock,
  type HostLockCheckDeps,
  isStuck,
  swapLiveness,
} from "../src/store/host-lock-check.ts";
import { inFlipBackWindow } from "../src/swap/flip-back.ts";
import type { SwapRecord } from "../src/swap/swap-record.ts";
import { cancelRollout } from "./cancel-rollout.ts";
import { knownHosts } from "./host-arg.ts";

/**
 * `/llm cancel [swap-id | host]`: before the switch the swap stops (detached download and build ended, files
 * kept); after it, the old service is put back as for a failed swap. The requester or an approver may
 * cancel. Without an id: the caller's one active swap; with a host: the swap that holds it. A swap that
 * can never run again (no job: the bot stopped before queueing it) is ended here and its host lock
 * cleared, saying so; one whose job is alive is only ever asked to stop (src/store/host-lock-check.ts).
 */
export const cancelCommand: SubCommand = {
  name: "cancel",
  usage: "/llm cancel [swap-id | rollout-id | host]",
  summary: "stop a swap (before the switch: files kept; after it: rolled back); clears a stuck host lock",
  async handle(request, { config, access, store, swaps }) {
    if (!(await access.isMember(request.user))) {
      return refusal(NOT_A_MEMBER);
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
    if (isRolloutId(id)) return await cancelRollout(id, request.user, { access, store, swaps });
    let host: string | undefined;
    if (!isSwapId(id)) {
      const known = knownHosts(config);
      if (!known.includes(id)) {
        return reply(
          `${echo(id)} is not a swap id (they look like \`${SWAP_ID_EXAMPLE}\`) or a known host (${known.join(", ")}). Active swaps: ${active.join(", ") || "none"}.`,
        );
      }
      host = id;
      const holder = await store.locks.hostHolder(host);
      if (holder === undefined) return reply(`No swap holds *${host}*: nothing to cancel there.`);
      id = holder;
    }
    const record = await store.swaps.get(id);
    host ??= record?.host ?? (await hostLockedBy(id, config, store));
    if (record === undefined && host === undefined)
      return reply(`No swap ${echo(id)}. Active swaps: ${active.join(", ") || "none"}.`);
    // A swap that can never run again is ended here, at once: a cancel request would wait for a job that
    // does not exist ("✋ Cancelling…", and the lock stays for good). A live one is never touched here.
    const deps = { store, jobState: (swapId: string) => swaps.jobState(swapId) };
    const lock = await checkHostLock(host ?? record!.host, deps).catch((error: unknown) => ({ error }));
    if ("error" in lock) return failure(lock.error);
    const held = lock.holder === id ? lock : await orphan(id, record, deps);
    if (held !== undefined && isStuck(held)) {
      // a lock with no running record to name its requester: only an approver may clear it
      const requester = held.record?.outcome === undefined ? held.record?.requester : undefined;
      const mayClear = requester === request.user || (await access.isApprover(request.user));
      if (!mayClear) {
        return refusal(
          `Only ${requester === undefined ? "an approver" : `${person(requester) ?? "its requester"}, who requested swap \`${id}\`, or an approver`} may clear the lock of *${held.host}*.`,
        );
      }
      const why = deadReason(held.liveness.why, held.liveness.job);
      try {
        const cleared = await clearStuckLock(
          held,
          { by: request.user, outcome: "cancelled", reason: `cancelled${by(request.user)}: it ${why}` },
          deps,
        );
        if (!cleared) return reply(`Swap \`${id}\` no longer holds *${held.host}*: nothing to clear.`);
      } catch (error) {
        return failure(error);
      }
      return accepted(clearedLockLine(held, "the swap marked cancelled"), id);
    }
    if (record === undefined) {
      return reply(
        `Swap \`${id}\` on *${host}* is being queued right now (requested ${sinceWhen(new Date(swapIdTime(id) ?? Date.now()).toISOString())}); look again in a moment.`,
      );
    }
    if (record.outcome !== undefined) {
      return reply(
        `Swap \`${id}\` already finished: ${record.outcome.replace("_", " ")}. Nothing to cancel.`,
      );
    }
    if (record.requester !== request.user && !(await access.isApprover(request.user))) {
      return refusal(
        `Only ${person(record.requester) ?? "its requester"}, who requested swap \`${id}\`, or an approver may cancel it.`,
      );
    }
    try {
      const first = await store.approvals.requestCancel(id, request.user);
      await swaps.wake(id);
      if (!first) return accepted(`Swap \`${id}\` is already being cancelled.`, id);
    } catch (error) {
      return failure(error);
    }
    const after = inFlipBackWindow(record)
      ? `: it flips back to \`${record.previous?.unit ?? "the old unit"}\`, still loaded, in about a second, once a check finds it still serves`
      : record.switch !== undefined
        ? ": the switch has happened, so the old service will be put back"
        : "; downloaded files are kept";
    return accepted(`✋ Cancelling swap \`${id}\` on *${record.host}*${after}. Follow its card.`, id);
  },
};

/** The configured host whose lock `id` holds, if any (a swap without a record is known only by its lock). */
async function hostLockedBy(
  id: string,
  config: CommandDeps["config"],
  store: CommandDeps["store"],
): Promise<string | undefined> {
  for (const h of config.file.hosts) if ((await store.locks.hostHolder(h.name)) === id) return h.name;
  return undefined;
}

/**
 * A swap that holds no lock but whose record never ended (it lost its lock, or never had one): judged
 * like a holder, so a dead one can be ended too. Undefined for a finished one.
 */
async function orphan(
  id: string,
  record: SwapRecord | undefined,
  deps: HostLockCheckDeps,
): Promise<HeldLock | undefined> {
  if (record === undefined || record.outcome !== undefined) return undefined;
  return {
    host: record.host,
    holder: id,
    record,
    since: record.createdAt,
    liveness: await swapLiveness(id, record, deps),
    touched: record.switch !== undefined,
  };
}
