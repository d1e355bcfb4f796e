import type { KnownBlock } from "@slack/types";
import { roughly, utcTime } from "../format-duration.ts";
import { APPROVE_ACTION_ID, REJECT_ACTION_ID } from "../grammar/action-ids.ts";
import { by } from "../grammar/person.ts";
import { formatGB } from "../plan/byte-units.ts";
import type { SwapPlan } from "../plan/types.ts";
import { realTotalBytes } from "../plan/weight-scale.ts";
import type { RolloutEvent, RolloutRecord } from "../rollout/rollout-record.ts";
import {
  alignColumns,
  codeBlock,
  context,
  header,
  LIMITS,
  message,
  type SlackMessage,
  section,
  truncate,
} from "../slack/blocks.ts";
import type { SwapRecord } from "../swap/swap-record.ts";
import { code, mention } from "./plan-text.ts";

/*
 * A rollout in Slack: its card (one message in the channel, a row per host), its plan (in the card's
 * thread, with the Approve/Reject buttons), and one line per event of its job. Each host's own swap keeps
 * its card and thread; the rows name its swap.
 */

/** A host's swap as the rollout's card shows it: undefined when its record could not be read. */
export type Children = ReadonlyMap<string, SwapRecord | undefined>;

export function renderRolloutCard(
  record: RolloutRecord,
  children: Children,
  links: Readonly<Record<string, string>> = {},
): SlackMessage {
  const model = modelText(record, children);
  const title =
    record.undoes === undefined
      ? `Rollout: ${truncate(model, 100)} → ${record.hosts.length} hosts${record.group === undefined ? "" : ` (${record.group})`}`
      : `Rollout: ${record.hosts.length} hosts back to what they served before rollout ${record.undoes}`;
  const status = statusLine(record);
  const rows = [
    ["host", "wave", "state", "out tok/s", "swap"],
    ...record.hosts.map((h) => {
      const child = children.get(h.swapId);
      const tokS = child?.benchmark?.single.outputThroughput;
      return [
        h.host,
        h.wave === 0 ? "canary" : String(h.wave + 1),
        hostState(child, h.releasedAt !== undefined),
        tokS === undefined ? "" : tokS.toFixed(1),
        h.swapId,
      ];
    }),
  ];
  const blocks: KnownBlock[] = [
    header(title),
    section(status),
    section(codeBlock(alignColumns(rows))),
    ...threadLinks(record, links),
    context(
      `Rollout \`${record.id}\` · requested by ${mention(record.requester)} · each host's swap has its own card and thread`,
    ),
  ];
  return message(`${title}: ${status}`, blocks);
}

/** The hosts' threads, linked, as far as a context element's text holds them (the rest named by count). */
function threadLinks(record: RolloutRecord, links: Readonly<Record<string, string>>): KnownBlock[] {
  const linked = record.hosts.filter((h) => links[h.host] !== undefined);
  if (linked.length === 0) return [];
  const parts: string[] = [];
  let length = "Threads: ".length;
  for (const h of linked) {
    const part = `<${links[h.host]}|${h.host}>`;
    if (length + part.length + 3 > LIMITS.sectionText - 40) break;
    parts.push(part);
    length += part.length + 3;
  }
  const more = linked.length - parts.length;
  return [
    context(`Threads: ${parts.join(" · ")}${more === 0 ? "" : ` · and ${more} more (their swap ids above)`}`),
  ];
}

function statusLine(record: RolloutRecord): string {
  const waves = new Set(record.hosts.map((h) => h.wave)).size;
  switch (record.outcome) {
    case "succeeded":
      return `✅ *Rolled out* to every host, ${waves} wave${waves === 1 ? "" : "s"}, each past its gate.`;
    case "halted":
      return `⛔ *Halted* at wave ${record.wave + 1} of ${waves}: ${record.reason ?? ""}`;
    case "rejected":
      return `🚫 *Rejected*${record.decision === undefined ? "" : by(record.decision.by)}: no host was touched.`;
    case "expired":
      return "⌛ *Expired*: nobody approved in time; no host was touched.";
    case "cancelled":
      return `✋ *Cancelled*${record.cancel === undefined ? "" : by(record.cancel.by)}: the hosts not reached were not touched.`;
    case "failed":
      return `❌ *Failed*: ${record.reason ?? ""}`;
    case undefined:
      break;
  }
  if (record.step === "plan")
    return "⏳ Every host is planning, downloading and building; then one plan for approval.";
  if (record.step === "approval")
    return `⏳ Waiting for an approver's decision on the plan (in the thread)${record.approval === undefined ? "" : `, until ${utcTime(record.approval.expiresAt)}`}.`;
  if (record.step === "halting") return `⛔ Halting at wave ${record.wave + 1}: ${record.reason ?? ""}`;
  return `🔄 Wave ${record.wave + 1} of ${waves}${record.wave === 0 ? " (the canary)" : ""}; approved${record.decision === undefined ? "" : by(record.decision.by)}.`;
}

function hostState(child: SwapRecord | undefined, released: boolean): string {
  if (child === undefined) return "record unreadable";
  if (child.outcome !== undefined)
    return child.outcome === "rolled_back"
      ? "rolled back"
      : child.outcome === "succeeded"
        ? "✓ serves it"
        : child.outcome;
  if (child.step === "resolve" || child.step === "preflight") return "planning";
  if (child.step === "prepare") {
    const tasks = [child.stages.download, child.stages.build].some((s) => s.state === "running");
    // its files from a peer (src/host/peer-copy.ts), or none yet: a host waiting for a peer is not ready
    const fetching = child.peerCopy?.state === "copying" ? "copying" : "downloading";
    const waitsForFiles =
      child.stages.download.state === "pending" && child.stages.download.detail !== undefined;
    if (released)
      return tasks
        ? `approved, ${fetching}`
        : waitsForFiles
          ? "approved, waits for files"
          : "approved, starting";
    if (tasks) return fetching;
    return waitsForFiles ? "waits for a peer's files" : "ready, waits for its wave";
  }
  return child.step;
}

function modelText(record: RolloutRecord, children: Children): string {
  const sha = [...children.values()].find((c) => c?.plan !== undefined)?.plan?.model.sha;
  return `${record.request.model.repo}@${sha === undefined ? record.request.model.revision : sha.slice(0, 7)}`;
}

/**
 * The rollout's plan: what each host will do (its own plan, summed up: GPUs, tp, how clients see it, the
 * expected downtime), the waves and the gate between them, what crosses the Hub, and the buttons.
 */
export function renderRolloutPlan(
  record: RolloutRecord,
  children: Children,
  status: { awaiting: boolean; decided?: string; replacedBy?: true; approvers?: string },
): SlackMessage {
  const model = modelText(record, children);
  const waves = [...new Set(record.hosts.map((h) => h.wave))].sort((a, b) => a - b);
  const title =
    record.undoes === undefined
      ? `Rollout plan: ${truncate(model, 90)} → ${record.hosts.length} hosts`
      : `Rollout plan: ${record.hosts.length} hosts back to what they served before rollout ${record.undoes}`;
  const plans = record.hosts.map((h) => ({ h, plan: children.get(h.swapId)?.plan }));
  const rows = [
    ["host", "wave", "GPUs", "tp", "clients", "down"],
    ...plans.map(({ h, plan }) => [
      h.host,
      h.wave === 0 ? "canary" : String(h.wave + 1),
      plan === undefined ? "?" : gpus(plan),
      plan === undefined ? "?" : String(plan.tp),
      plan === undefined ? "?" : mode(plan),
      plan === undefined
        ? "?"
        : plan.clients?.blueGreen !== undefined
          ? "none"
          : roughly(plan.expectedDowntimeSeconds),
    ]),
  ];
  const size = plans.find((p) => p.plan !== undefined)?.plan;
  const bytes = size === undefined ? undefined : realTotalBytes(size.model, size.weightScale ?? 1);
  const onDisk = plans.filter((p) => p.plan !== undefined && p.plan.host.bytesOnDisk > 0).length;
  const statusText = status.replacedBy
    ? "~Replaced by a newer plan (a host's plan changed)~: this one counts for nothing."
    : status.decided !== undefined
      ? status.decided
      : status.awaiting
        ? `*Waiting for* ${status.approvers ?? "an approver"}: one approval moves every wave${record.approval === undefined ? "" : `, until ${utcTime(record.approval.expiresAt)}`}. Requested by ${mention(record.requester)}.`
        : "";
  const lines = [
    `*Waves* ${waves
      .map(
        (w) =>
          `${w === 0 ? "canary" : `wave ${w + 1}`}: ${record.hosts
            .filter((h) => h.wave === w)
            .map((h) => h.host)
            .join(", ")}`,
      )
      .join(
        " · ",
      )}. At most ${record.policy.maxUnavailable} host${record.policy.maxUnavailable === 1 ? "" : "s"} switch at once.`,
    `*Gate between waves* every host of the wave healthy, sane and benchmarked (its own swap's checks, each rolled back by itself on a failure)${record.policy.throughputMargin >= 100 ? "" : `, and its output tok/s at most ${record.policy.throughputMargin} % below the canary's`}. A failure halts the rollout: the hosts not reached are not touched, and the finished waves stay as they are.`,
    record.undoes !== undefined
      ? "*Weights* on each host's disk already: what it served before (`retention.keep` keeps them)."
      : weightsLine(record, bytes, onDisk),
  ];
  const blocks: KnownBlock[] = [
    header(title),
    ...(statusText === "" ? [] : [section(statusText)]),
    section(codeBlock(alignColumns(rows))),
    section(lines.join("\n")),
  ];
  if (status.awaiting && !status.replacedBy && status.decided === undefined) {
    blocks.push(
      {
        type: "actions",
        block_id: "rollout_decision",
        elements: [
          {
            type: "button",
            action_id: APPROVE_ACTION_ID,
            style: "primary",
            text: { type: "plain_text", text: "Approve", emoji: true },
            value: record.id,
          },
          {
            type: "button",
            action_id: REJECT_ACTION_ID,
            style: "danger",
            text: { type: "plain_text", text: "Reject", emoji: true },
            value: record.id,
          },
        ],
      },
      context(
        "React ✅ to approve or ❌ to reject (approvers only; not the requester). Each host's full plan is in its own swap's thread.",
      ),
    );
  }
  return message(`${title}: ${statusText}`, blocks);
}

function gpus(plan: SwapPlan): string {
  const names = [...new Set(plan.host.gpus.map((g) => g.name.replace(/^NVIDIA /, "")))];
  return `${plan.host.gpus.length}× ${truncate(names.join("/"), 30)}`;
}

function mode(plan: SwapPlan): string {
  const c = plan.clients;
  if (c?.inPlace?.will === true) return "in place";
  if (c?.blueGreen !== undefined) return "blue/green";
  if (c?.park?.will === true) return "cold, old parked";
  return c?.frontDoor === undefined ? "cold" : "cold, held";
}

/** One event of the rollout's job as a line in its thread (approval events are the plan's own). */
export function rolloutEventLine(event: RolloutEvent, record: RolloutRecord): string | undefined {
  switch (event.type) {
    case "approval-requested":
    case "approval-closed":
      return undefined;
    case "approval-decided":
      return event.approved
        ? `✅ Approved${by(event.by)}: the canary goes first.`
        : `🚫 Rejected${by(event.by)}: no host is touched.`;
    case "wave-started":
      return `🔄 Wave ${event.wave + 1}${event.wave === 0 ? " (the canary)" : ""}: ${event.hosts.join(", ")}.`;
    case "wave-passed": {
      const figures = Object.entries(event.tokS)
        .map(([h, t]) => `${h} ${t.toFixed(1)}`)
        .join(", ");
      return `✅ Wave ${event.wave + 1} passed its gate${figures === "" ? "" : ` (output tok/s: ${figures}${event.canaryTokS === undefined ? "" : `; the canary's ${event.canaryTokS.toFixed(1)}`})`}.`;
    }
    case "halted": {
      const head =
        event.cancelledBy === undefined
          ? `⛔ *Rollout halted* at wave ${event.wave + 1}: ${event.reason}.`
          : `✋ *Rollout cancelled*${by(event.cancelledBy)} ${event.approved === true ? `at wave ${event.wave + 1}` : "before its plan was approved"}.`;
      const parts = [
        head,
        event.untouched.length === 0
          ? undefined
          : `Not touched (their swaps cancelled, files kept): ${event.untouched.join(", ")}.`,
        event.kept.length === 0
          ? undefined
          : `Serving the new model from earlier waves, left so: ${event.kept.join(", ")}. \`/llm rollback <host>\` takes one back, \`/llm rollback --rollout ${record.id}\` all of them (one approval).`,
        event.undone.length === 0
          ? undefined
          : `Taken back (their own swaps succeeded, but the wave did not pass): ${event.undone.join(", ")}.`,
        event.finished.length === 0
          ? undefined
          : `Finished in this wave${event.cancelledBy === undefined ? ", not taken back" : " before the cancel"}: ${event.finished.join(", ")} (\`/llm rollback <host>\` takes one back).`,
      ];
      return parts.filter((p) => p !== undefined).join("\n");
    }
    case "finished":
      // a halt or a cancel has said it all in its own line
      if (event.outcome === "halted" || event.outcome === "cancelled") return undefined;
      return event.outcome === "succeeded"
        ? `✅ *Rolled out* ${code(record.request.model.repo, 100)} to ${record.hosts.length} hosts.`
        : `${event.outcome === "failed" ? "❌" : "✋"} Rollout ${event.outcome}${event.reason === undefined ? "" : `: ${event.reason}`}.`;
  }
}

/**
 * What the weights cost: with peer copies, one download from the Hub and the rest host to host in rounds
 * (each host holding them serves `copyFanout` at once, so the holders multiply by copyFanout + 1 a round);
 * without, one download per host.
 */
export function weightsLine(
  record: Pick<RolloutRecord, "hosts" | "policy">,
  bytes: number | undefined,
  onDisk: number,
): string {
  const fetching = record.hosts.length - onDisk;
  const checked = "Each host's files are checked against the Hub's sha256 before it counts.";
  const disk = onDisk === 0 ? "" : ` (${onDisk} host${onDisk === 1 ? " has" : "s have"} them on disk)`;
  const fanout = record.policy.copyFanout;
  const size = bytes === undefined ? "" : ` ${formatGB(bytes)} a host,`;
  if (fanout === 0 || record.hosts.length < 2)
    return `*Weights*${size} from the Hub to each: ${fetching} download${fetching === 1 ? "" : "s"}${disk}. ${checked}`;
  const copies = record.hosts.length - 1;
  let holders = 1;
  let rounds = 0;
  while (holders < record.hosts.length) {
    holders *= fanout + 1;
    rounds++;
  }
  const hubBytes =
    bytes === undefined
      ? ""
      : ` Hub bytes: ${formatGB(bytes)}, not ${formatGB(bytes * record.hosts.length)}.`;
  // a round: each holder serves up to `fanout` copies at once over its one link
  const perCopy = Math.min(fanout, copies);
  const gbps = record.policy.copyGbps;
  const copyTime =
    bytes === undefined
      ? ""
      : `, about ${roughly((rounds * bytes * perCopy * 8) / (gbps * 1e9))} at ${gbps} Gbit/s between hosts (\`copyGbps\`)`;
  return `*Weights*${size} from the Hub once: ${record.hosts[0]!.host} fetches them, and ${copies} cop${copies === 1 ? "y goes" : "ies go"} host to host over SSH (rsync; at most ${fanout} from one host at once: about ${rounds} round${rounds === 1 ? "" : "s"} of copies${copyTime})${disk}.${hubBytes} A host that cannot copy from a peer fetches from the Hub. ${checked}`;
}
