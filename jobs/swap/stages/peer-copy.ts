import { isoNow } from "../../../src/clock.ts";
import { describeError } from "../../../src/errors.ts";
import { copyMarker, type PeerSource, servingLine } from "../../../src/host/peer-copy.ts";
import { sh } from "../../../src/host/shell-quote.ts";
import type { StageContext } from "../../../src/swap/stage-context.ts";
import { addServingLine, copyScript, PEER_KEY_VARIABLE, removeServingLine } from "./peer-copy-task.ts";

type Ctx = Pick<StageContext, "clock" | "emit" | "host" | "log" | "peers" | "swap">;

/**
 * How long a serving line admits the rollout's key (its `expiry-time`), should its swap never get to
 * remove it: the 24 h a rollout's host waits for its wave, and a margin.
 */
const SERVING_HOURS = 26;

/** One plain word: what rsync's -e and sshd's command= take without splitting or quoting it. */
const PLAIN_PATH = /^\/[A-Za-z0-9._/@+-]+$/;

/**
 * Before a rollout's host fetches from the Hub: take a peer that holds the verified files (the record then
 * says `copying` from it), or wait for one (the stage says for what), or settle on the Hub (the record
 * says why, once). Nothing is started here: the download step starts the task the record names.
 */
export async function choosePeer(
  ctx: Ctx,
  dir: string,
): Promise<{ kind: "copy"; source: PeerSource } | { kind: "wait" } | { kind: "hub" }> {
  const { swap, peers } = ctx;
  if (peers === undefined || swap.record.peerCopy?.state === "hub") return { kind: "hub" };
  const hub = (why: string) => {
    swap.set({ peerCopy: { state: "hub", why } });
    return { kind: "hub" } as const;
  };
  if (!PLAIN_PATH.test(dir)) return hub(`the task directory ${dir} is not one plain word rsync could take`);
  const choice = await peers.choose();
  if (choice.kind === "hub") return hub(choice.why);
  if (choice.kind === "wait") {
    swap.stage("download", "pending", choice.why);
    return { kind: "wait" };
  }
  swap.set({ peerCopy: { state: "copying", from: choice.source.host } });
  return { kind: "copy", source: choice.source };
}

/**
 * The peer to start the record's copy again from (its task was lost): the one it holds, or another that
 * has a slot when that one serves no more. Undefined when there is none now: the record then says the files
 * come from the Hub, and why.
 */
export async function peerToCopyFrom(ctx: Ctx): Promise<PeerSource | undefined> {
  const { peers, swap } = ctx;
  const was = swap.record.peerCopy?.from ?? "?";
  const choice = await peers!.choose();
  if (choice.kind === "peer") {
    swap.set({ peerCopy: { ...swap.record.peerCopy!, from: choice.source.host } });
    return choice.source;
  }
  await peers!.release();
  swap.set({ peerCopy: { state: "hub", from: was, why: `${was} serves its files no more: ${choice.why}` } });
  return undefined;
}

/** Starts the copy from `source` in the task's directory; the key goes as a secret, never in the script. */
export async function startCopy(
  ctx: Ctx,
  dir: string,
  info: Parameters<typeof copyScript>[0],
  modelDir: string,
  source: PeerSource,
): Promise<void> {
  const key = await ctx.peers!.key();
  await ctx.host.startTask(dir, copyScript(info, modelDir, dir, source), {
    [PEER_KEY_VARIABLE]: key.privateKey,
  });
}

/** The copy ended well: its slot is let go, and the record says so. */
export async function copied(ctx: Ctx): Promise<string> {
  const { swap } = ctx;
  const from = swap.record.peerCopy!.from!;
  await ctx.peers!.release();
  swap.set({ peerCopy: { ...swap.record.peerCopy!, state: "copied" } });
  return from;
}

/** The copy failed: its slot is let go, the thread says why, and the files now come from the Hub. */
export async function copyFailed(ctx: Ctx, log: string[]): Promise<void> {
  const { swap } = ctx;
  const from = swap.record.peerCopy?.from ?? "?";
  await ctx.peers!.release();
  const last = log.at(-1) ?? "no output";
  ctx.log.warn({ from, last }, "peer copy failed; fetching from the Hub");
  swap.set({ peerCopy: { state: "hub", from, why: `the copy from ${from} failed: ${last}` } });
  ctx.emit({ type: "peer-copy-failed", from, log });
}

/**
 * A rollout's host whose files are verified serves them to its peers, once: the rollout's line on it
 * (under this swap's fence), then the store's list. A host that cannot (no rrsync, no SSH address, a line
 * that cannot be written) says why in the store, and its peers go elsewhere or to the Hub.
 */
export async function serveFiles(ctx: Ctx, modelDir: string): Promise<void> {
  const { swap, peers, host } = ctx;
  if (peers === undefined || swap.record.peerServing !== undefined) return;
  const unable = async (why: string) => {
    swap.set({ peerServing: { unable: why } });
    await peers.cannotServe(why);
  };
  const as = await peers.servingAs(modelDir);
  if ("why" in as) return await unable(as.why);
  const rrsync = await host.exec(sh`command -v rrsync`);
  if (rrsync.code !== 0)
    return await unable(
      "rrsync is not installed (it comes with the rsync package of Debian 12 and Ubuntu 24.04, and newer)",
    );
  try {
    const key = await peers.key();
    const line = servingLine({
      publicKey: key.publicKey,
      modelDir,
      from: as.from,
      expires: new Date(ctx.clock.now() + SERVING_HOURS * 3_600_000),
      rolloutId: peers.rolloutId,
      host: host.name,
    });
    await host.change(
      addServingLine(line, copyMarker(peers.rolloutId, host.name)),
      "letting the rollout's peers copy the files",
    );
  } catch (error) {
    ctx.log.warn({ err: describeError(error) }, "cannot serve the files to peers");
    return await unable(error instanceof Error ? error.message : String(error));
  }
  swap.set({ peerServing: { since: isoNow(ctx.clock) } });
  await swap.checkpoint();
  await peers.serve(as.source);
}

/**
 * At the swap's end: a copy it was making lets its peer's slot go (its task was stopped with the swap's
 * others), and its peers copy from it no more (a copy already running goes on: sshd checked the key when
 * it connected). The line is removed under the swap's fence; a host that cannot be reached keeps it until
 * its expiry-time.
 */
export async function leavePeers(ctx: Ctx): Promise<void> {
  const { swap, peers, host } = ctx;
  if (peers === undefined) return;
  const copy = swap.record.peerCopy?.state;
  if (copy === "copying") await peers.release();
  // the task's trap deletes its key when it exits; a task killed outright (the swap's end stops it) cannot
  const dir = swap.record.tasks.download?.dir;
  if ((copy === "copying" || copy === "copied") && dir !== undefined)
    await host
      .change(sh`rm -f -- ${`${dir}/peer_key`}`, "removing the copy's key")
      .catch((error: unknown) =>
        ctx.log.warn({ err: describeError(error) }, "the copy's key could not be removed"),
      );
  if (swap.record.peerServing?.since === undefined) return;
  await peers.unserve();
  try {
    await host.change(
      removeServingLine(copyMarker(peers.rolloutId, host.name)),
      "removing the rollout's copy key",
    );
  } catch (error) {
    ctx.log.warn(
      { err: describeError(error) },
      "the rollout's copy key could not be removed; it expires by itself",
    );
  }
}
