import { escapeMrkdwn } from "../escape-mrkdwn.ts";
import { duration, utcTime } from "../format-duration.ts";
import { formatGB, formatGiB } from "../plan/byte-units.ts";
import { movedBytes } from "../plan/weight-scale.ts";
import { codeBlock, message, type SlackMessage, section } from "../slack/blocks.ts";
import type { StoredSwapEvent } from "../swap/swap-events.ts";
import type { SwapRecord } from "../swap/swap-record.ts";
import { finalLine } from "./final-line.ts";

const STAGE_WORD = { health: "health wait", sanity: "sanity check" } as const;

/** A reply in the swap's thread; `broadcast` also shows it in the channel (the outcome only). */
export interface ThreadReply {
  message: SlackMessage;
  broadcast?: boolean;
}

/**
 * What one event says in the swap's thread: a milestone, a failure with its log tail, the outcome.
 * Events that only move the card (or are shown by the approval gate and the benchmark report) say
 * nothing here. Log lines and errors are quoted as text, never as mrkdwn.
 */
export function threadReply(event: StoredSwapEvent, record: SwapRecord): ThreadReply | undefined {
  switch (event.type) {
    case "download-retrying":
      return say(
        `⚠️ Download attempt ${event.attempt - 1} ended (${event.state}${event.exitCode === undefined ? "" : `, exit ${event.exitCode}`}); retrying — complete files are kept.`,
        event.log.slice(-8),
      );
    case "downloaded":
      return say(
        event.from === undefined
          ? `📦 Download complete: ${event.files} files, ${movedBytes(event.bytes, event.realBytes)}, sizes and sha256 verified.`
          : `📦 Copied from ${escapeMrkdwn(event.from)}, not the Hub: ${event.files} files, ${movedBytes(event.bytes, event.realBytes)}, sizes and the Hub's sha256 verified.`,
      );
    case "download-failed":
      return say("❌ Download failed:", event.log);
    case "peer-copy-failed":
      return say(
        `⚠️ The copy from ${escapeMrkdwn(event.from)} failed: fetching the files from the Hub instead.`,
        event.log,
      );
    case "built":
      return say(
        `🔧 Engine built: commit \`${escapeMrkdwn(event.commit.slice(0, 12))}\` (${event.engine} ${escapeMrkdwn(event.version)}); every flag of the plan checked against its \`--help\`.`,
      );
    case "build-failed":
      return say("❌ Engine build failed:", event.log);
    case "switched": {
      if (event.beside !== undefined)
        return say(
          `🔀 Started beside: \`${escapeMrkdwn(event.to)}\` on GPU${event.beside.devices.length === 1 ? "" : "s"} ${event.beside.devices.join(",")} (port ${event.beside.port}, ${event.beside.gpus === "spare" ? "spare GPUs" : "sharing the old unit's GPUs"}); production stays on the old unit until the flip.`,
        );
      const clients = event.held === true ? "New requests are held meanwhile." : "Downtime clock running.";
      const took = (what: string) =>
        event.stopSeconds === undefined ? "" : ` (its ${what} took ${duration(event.stopSeconds)})`;
      const old = event.parked === true ? `parked${took("park")}` : `stopped and disabled${took("stop")}`;
      return say(
        event.from === undefined
          ? `🔀 Switched: \`${escapeMrkdwn(event.to)}\` enabled and started (nothing served before).`
          : `🔀 Switched: \`${escapeMrkdwn(event.from)}\` ${old}, \`${escapeMrkdwn(event.to)}\` enabled and started. ${clients}`,
      );
    }
    case "updated": {
      const unit = `\`${escapeMrkdwn(event.unit)}\``;
      const how = `\`${escapeMrkdwn(event.mechanism)}\``;
      if (event.refused !== undefined)
        return say(
          `❌ ${unit} refused the new weights (${how}) and kept serving the old ones: ${escapeMrkdwn(event.refused)}`,
        );
      return say(
        `⚡ New weights loaded into the running ${unit}${event.seconds === undefined ? "" : ` in ${duration(event.seconds)}`} (${how}): the same process${event.mainPid === undefined ? "" : ` (MainPID ${event.mainPid})`}, so no restart, graph capture or JIT.`,
      );
    }
    case "reverted":
      return say(
        event.how === "loaded-back"
          ? `↩️ The old weights loaded back into \`${escapeMrkdwn(event.unit)}\`${event.seconds === undefined ? "" : ` in ${duration(event.seconds)}`}: the same process.`
          : `⚠️ \`${escapeMrkdwn(event.unit)}\` restarted from its unit file with the old weights${event.why === undefined ? "" : `: ${escapeMrkdwn(event.why)}`}.`,
      );
    case "flipped":
      return say(
        `🔁 Flipped: the front door sends new requests to \`${escapeMrkdwn(event.to)}\` (the new unit) and drains \`${escapeMrkdwn(event.from)}\`; no request waited. The old model stays loaded until ${utcTime(event.flipBackUntil)}: \`/llm cancel ${escapeMrkdwn(record.id)}\` (or \`/llm rollback ${escapeMrkdwn(record.host)}\`) flips back in about a second.`,
      );
    case "retired":
      return say(
        `🛑 \`${escapeMrkdwn(event.unit)}\` stopped and disabled after the flip-back window; ${
          event.cut === 0
            ? `its last requests had ended by ${duration(event.drainSeconds)} after the flip.`
            : `${event.cut} request${event.cut === 1 ? " was" : "s were"} still in flight when the drain's bound ran out and ${event.cut === 1 ? "was" : "were"} cut by the stop.`
        }`,
      );
    case "restarting":
      return say(
        `🔄 Restarting \`${escapeMrkdwn(event.unit)}\` at full memory now that the old unit has stopped: the front door holds new requests (up to ${duration(event.holdSeconds)}) while it loads again.`,
      );
    case "restarted":
      return say(
        event.failed === undefined
          ? `🔄 \`${escapeMrkdwn(event.unit)}\` serves at full memory (${formatGiB(event.kvPerGpuBytes)}/GPU KV cache): the held requests went to it after ${duration(event.heldSeconds)}; none failed.`
          : `⚠️ The restart at full memory failed (${escapeMrkdwn(event.failed)}): \`${escapeMrkdwn(event.unit)}\` serves again as it did beside the old unit (${formatGiB(event.kvPerGpuBytes)}/GPU KV cache); new requests were held ${duration(event.heldSeconds)}.`,
      );
    case "flipped-back":
      return say(
        `🔁 Flipped back: the front door sends new requests to \`${escapeMrkdwn(event.to)}\` again; \`${escapeMrkdwn(event.unit)}\` never stopped. The new unit drains, then stops.`,
      );
    case "flip-back-refused":
      return say(
        `⚠️ Not flipped back: \`${escapeMrkdwn(event.unit)}\` no longer serves (${escapeMrkdwn(event.why)}); \`${escapeMrkdwn(event.serving)}\` keeps serving, and the swap goes on. Put the old model back with a new swap once \`${escapeMrkdwn(event.unit)}\` is fixed.`,
      );
    case "discarded":
      return say(
        `🧹 \`${escapeMrkdwn(event.unit)}\` stopped: it never took a production request, and \`${escapeMrkdwn(event.serving)}\` served throughout. Nothing to roll back.`,
      );
    case "preloaded":
      return say(
        event.ok
          ? `📥 The new weights are in the page cache (read in ${duration(event.seconds)}): the load reads memory, not disk.`
          : `⚠️ The page-cache preload did not finish (${escapeMrkdwn(event.detail)}): the new unit reads its weights from disk.`,
      );
    case "parked":
      return say(
        event.failed === undefined
          ? `💤 \`${escapeMrkdwn(event.unit)}\` parked in ${duration(event.seconds)}: its weights in host RAM${event.keptGiB === undefined ? "" : `, its GPUs holding up to ${event.keptGiB.toFixed(1)} GiB each (nvidia-smi)`}. If the new model fails, it wakes in seconds.`
          : `⚠️ \`${escapeMrkdwn(event.unit)}\` would not sleep (${escapeMrkdwn(event.failed)}): stopped instead, so a rollback reloads it.`,
      );
    case "unparked":
      if (event.how === "woken")
        return say(
          `⏰ \`${escapeMrkdwn(event.unit)}\` woken${event.seconds === undefined ? "" : ` in ${duration(event.seconds)}`}: its weights are back on the GPUs, and it answered its sanity prompts again.`,
        );
      if (event.how === "reloaded")
        return say(
          `⚠️ \`${escapeMrkdwn(event.unit)}\`, parked, is reloaded from disk: ${escapeMrkdwn(event.why ?? "it did not wake")}.`,
        );
      return say(`🛑 \`${escapeMrkdwn(event.unit)}\`, parked, stopped: the new model took the requests.`);
    case "drained":
      return say(
        `🚪 Front door: new requests are held (up to ${duration(event.holdSeconds)}) while \`${escapeMrkdwn(event.server)}\` drains; ${
          event.cut === 0
            ? `its requests in flight ended after ${duration(event.seconds)}.`
            : `${event.cut} request${event.cut === 1 ? " was" : "s were"} still in flight when the drain's bound ran out (${duration(event.seconds)}) and ${event.cut === 1 ? "is" : "are"} cut by the stop.`
        }`,
      );
    case "released":
      return say(
        `🚪 Front door: the held requests go to \`${escapeMrkdwn(event.server)}\` now; new requests waited at most ${duration(event.heldSeconds)}.`,
      );
    case "health-failed":
      return say(
        `❌ \`${escapeMrkdwn(event.unit)}\` did not become healthy: ${escapeMrkdwn(event.why)}`,
        event.journal,
      );
    case "sanity-failed": {
      const lines = event.prompts.map(
        (p) => `• ${p.verdict}: “${p.prompt}” → “${p.output.slice(0, 60)}” (${p.detail})`,
      );
      return say(escapeMrkdwn(`❌ Sanity check failed: ${event.summary}\n${lines.join("\n")}`));
    }
    case "benchmark-failed":
      return say(
        `⚠️ The benchmark could not run: ${escapeMrkdwn(event.error)}. The swap goes on without its numbers (a benchmark that cannot run never undoes a swap).`,
      );
    case "rolling-back": {
      // A failed health wait or sanity check has told its reason in the reply just above: not again.
      const toldAbove = (["health", "sanity"] as const).find((s) => record.stages[s].state === "failed");
      const why =
        toldAbove === undefined
          ? `: ${escapeMrkdwn(event.why)}`
          : ` (the ${STAGE_WORD[toldAbove]} failed, above)`;
      return say(
        event.to === undefined
          ? `↩️ Rolling back (nothing served before): stopping \`${escapeMrkdwn(event.stopping)}\`${why}`
          : `↩️ Rolling back to \`${escapeMrkdwn(event.to)}\`${why}`,
      );
    }
    case "rollback-failed":
      return say(
        `❌ \`${escapeMrkdwn(event.unit)}\` did not come back: ${escapeMrkdwn(event.why)}`,
        event.journal,
      );
    case "disk-reclaimed":
      if (event.error !== undefined)
        return say(`🧹 Disk retention after the swap did not run to the end: ${escapeMrkdwn(event.error)}`);
      if (event.deletedCount === 0) return undefined;
      return say(
        `🧹 Disk retention: deleted ${event.deletedCount} old ${event.deletedCount === 1 ? "entry" : "entries"} (freed ${formatGB(event.freedBytes)}, as df measures it); kept ${event.kept}, what serves and what a rollback needs among them. \`/llm gc ${escapeMrkdwn(record.host)} --dry-run\` lists what is kept and why.`,
        event.deleted,
      );
    case "finished": {
      const line = finalLine(record);
      // a rollout's host: its outcome is a row of the rollout's card, which says how the rollout ended
      return {
        message: message(line, [section(line)]),
        broadcast: record.outcome !== "planned" && record.rollout === undefined,
      };
    }
    default:
      return undefined;
  }
}

function say(text: string, log?: readonly string[]): ThreadReply {
  const blocks = [section(text)];
  if (log !== undefined && log.length > 0) blocks.push(section(codeBlock(log)));
  return { message: message(text, blocks) };
}
