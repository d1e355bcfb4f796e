import { isoNow } from "../../../src/clock.ts";
import { duration, roughly } from "../../../src/format-duration.ts";
import type { PeerSource } from "../../../src/host/peer-copy.ts";
import { sh } from "../../../src/host/shell-quote.ts";
import { movedBytes, realTotalBytes } from "../../../src/plan/weight-scale.ts";
import type { StageContext, StepResult } from "../../../src/swap/stage-context.ts";
import { eventLines } from "../../../src/swap/swap-events.ts";
import { downloadScript, taskDir, verificationFiles } from "./download-task.ts";
import { choosePeer, copied, copyFailed, peerToCopyFrom, serveFiles, startCopy } from "./peer-copy.ts";
import { reclaimBeforeDownload } from "./reclaim.ts";

/**
 * Stage 4a, one look: start the detached download (once; a restarted worker attaches to the one running),
 * restart it when it died (complete files are kept, up to swaps.downloadRetries times), report progress,
 * and notice the end. Returns a failure, or undefined to go on.
 */
export async function downloadStep(
  ctx: Pick<StageContext, "clock" | "emit" | "host" | "log" | "peers" | "settings" | "swap">,
): Promise<StepResult | undefined> {
  const { swap, host, clock } = ctx;
  const { record } = swap;
  if (record.stages.download.state === "done") {
    // in a rollout, verified files are served to the rollout's other hosts (peer-copy.ts)
    await serveFiles(ctx, record.plan!.modelDir);
    return undefined;
  }
  if (record.stages.download.state === "skipped") return undefined;
  if (await reclaimBeforeDownload(ctx)) return undefined;
  const info = record.model!;
  const plan = record.plan!;
  const dir = taskDir(host.config.modelsDir, record.id, "download");
  // the bytes this download moves; on the bench labelled as such, with the real model's size beside them
  const scale = plan.weightScale ?? 1;
  const realBytes = scale === 1 ? undefined : realTotalBytes(info, scale);
  const size = movedBytes(info.totalBytes, realBytes);
  const copying = () => swap.record.peerCopy?.state === "copying";
  // `chosen`: the peer just taken; a copy started again asks for the one it holds
  const start = async (chosen?: PeerSource) => {
    const source = chosen ?? (copying() ? await peerToCopyFrom(ctx) : undefined);
    if (source !== undefined) return await startCopy(ctx, dir, info, plan.modelDir, source);
    await host.startTask(dir, downloadScript(info, plan.modelDir, dir), ctx.settings.downloadSecrets);
  };
  if (record.tasks.download === undefined && (await host.taskStatus(dir)).state === "running") {
    // A worker died between starting the task and recording it: attach, never start a second `hf`.
    swap.set({ tasks: { ...record.tasks, download: { dir, startedAt: isoNow(clock), attempts: 1 } } });
  }
  const writeLists = async () => {
    const files = verificationFiles(info);
    await host.change(sh`mkdir -p ${dir} && cat > ${`${dir}/sizes`}`, "writing the download's size list", {
      stdin: files.sizes,
    });
    await host.change(sh`cat > ${`${dir}/sha256sums`}`, "writing the download's checksums", {
      stdin: files.sums,
    });
  };
  const begin = async (chosen?: PeerSource) => {
    await writeLists();
    await start(chosen);
    swap.set({ tasks: { ...swap.record.tasks, download: { dir, startedAt: isoNow(clock), attempts: 1 } } });
    swap.stage("download", "running", copying() ? `copying from ${swap.record.peerCopy!.from}` : "starting");
    await swap.checkpoint();
  };
  if (swap.record.tasks.download === undefined) {
    // a rollout's host copies from a peer that holds the files, or waits for one (peer-copy.ts)
    const how = await choosePeer(ctx, dir);
    if (how.kind === "wait") return undefined;
    if (how.kind === "copy") await swap.checkpoint(); // the claim is recorded before its task starts
    await begin(how.kind === "copy" ? how.source : undefined);
  }
  const task = swap.record.tasks.download!;
  const status = await host.taskStatus(dir);
  if (status.state === "exited" && status.exitCode === 0) {
    const seconds = (clock.now() - Date.parse(task.startedAt)) / 1000;
    const from = copying() ? await copied(ctx) : undefined;
    swap.stage(
      "download",
      "done",
      `${size} ${from === undefined ? "" : `copied from ${from} and `}verified in ${duration(seconds)}`,
    );
    ctx.emit({
      type: "downloaded",
      files: info.files.length,
      bytes: info.totalBytes,
      ...(realBytes === undefined ? {} : { realBytes }),
      ...(from === undefined ? {} : { from }),
    });
    await serveFiles(ctx, plan.modelDir);
    return undefined;
  }
  if ((status.state === "exited" || status.state === "dead") && copying()) {
    // a copy is not tried again: the Hub has the files, and the Hub's download its own retries
    await copyFailed(ctx, eventLines(status.logTail));
    await begin();
    return undefined;
  }
  if (status.state === "exited" || status.state === "dead") {
    if (task.attempts <= ctx.settings.downloadRetries) {
      const attempts = task.attempts + 1;
      ctx.log.warn(
        { attempt: attempts, state: status.state, exit: status.exitCode },
        "download failed; restarting",
      );
      ctx.emit({
        type: "download-retrying",
        attempt: attempts,
        state: status.state,
        ...(status.exitCode === undefined ? {} : { exitCode: status.exitCode }),
        log: eventLines(status.logTail),
      });
      await start();
      swap.set({ tasks: { ...swap.record.tasks, download: { ...task, attempts } } });
      await swap.checkpoint();
      return undefined;
    }
    swap.stage("download", "failed", `failed after ${task.attempts} attempts`);
    ctx.emit({ type: "download-failed", log: eventLines(status.logTail) });
    return { fail: `the download failed (${status.logTail.at(-1) ?? "no output"})`, touched: false };
  }
  if (status.state === "missing") {
    // its directory is gone (cleaned up on the host): the lists its verification reads go with it
    await writeLists();
    await start();
    return undefined;
  }
  const bytes = await bytesOnDisk(ctx, plan.modelDir);
  const previous = record.download;
  const now = clock.now();
  let rate = previous?.rate;
  if (previous !== undefined && now > Date.parse(previous.at) && bytes >= previous.bytes) {
    rate = ((bytes - previous.bytes) / (now - Date.parse(previous.at))) * 1000;
  }
  swap.set({ download: { bytes, at: new Date(now).toISOString(), ...(rate === undefined ? {} : { rate }) } });
  const pct = Math.min(100, Math.floor((bytes / Math.max(1, info.totalBytes)) * 100));
  const eta = rate !== undefined && rate > 0 ? ` · ETA ${roughly((info.totalBytes - bytes) / rate)}` : "";
  swap.stage(
    "download",
    "running",
    `${copying() ? `copying from ${swap.record.peerCopy!.from}: ` : ""}${pct} % of ${size}${rate !== undefined ? ` · ${(rate / 1e6).toFixed(1)} MB/s` : ""}${eta}`,
  );
  return undefined;
}

/** Bytes under a directory on the host (what a download has written so far, partial files included). */
export async function bytesOnDisk(ctx: Pick<StageContext, "host">, modelDir: string): Promise<number> {
  const result = await ctx.host.exec(sh`du -sb --apparent-size ${modelDir} 2>/dev/null | cut -f1`);
  return Number(result.stdout.trim()) || 0;
}
