import type { KnownBlock } from "@slack/types";
import { engineFor, engineOfExecStart } from "../engine/engines.ts";
import { escapeMrkdwn } from "../escape-mrkdwn.ts";
import { duration, roughly } from "../format-duration.ts";
import { APPROVE_ACTION_ID, REJECT_ACTION_ID } from "../grammar/action-ids.ts";
import { hubPullRequest } from "../grammar/model-ref.ts";
import { formatGB } from "../plan/byte-units.ts";
import { describeGpus } from "../plan/host-checks.ts";
import { describeRemoteCode } from "../plan/remote-code.ts";
import type { SwapPlan } from "../plan/types.ts";
import { benchScaleLine, leftOnHub, realTotalBytes } from "../plan/weight-scale.ts";
import {
  context,
  fields,
  header,
  LIMITS,
  message,
  type SlackMessage,
  section,
  truncate,
} from "../slack/blocks.ts";
import { clientsLine } from "./plan-clients.ts";
import { checkLine, clean, code, diffSize, flagText, mention, prose, sections } from "./plan-text.ts";
import { firstSentence } from "./sentences.ts";

export type PlanStatus =
  | "awaiting-approval"
  | "approved"
  | "rejected"
  | "expired"
  | "cancelled"
  | "refused"
  | "replaced"
  | "dry-run";

export interface PlanMessageOptions {
  swapId: string;
  /** Slack user id of the requester. */
  requester: string;
  status: PlanStatus;
  /** Slack user id of who approved or rejected. */
  decidedBy?: string;
  /** Who may approve, as mrkdwn the bot builds (mentions allowed), e.g. "<!subteam^S0123>". */
  waitingFor?: string;
  /** When the request expires unapproved (ISO time). */
  expiresAt?: string;
}

/**
 * The plan as a Slack message: what will be served, where, with which flags and why, every check, the
 * unit diff, what stops and for how long; Approve/Reject buttons only while it awaits approval (and
 * only when every check passed). Fits Slack's limits whatever the names, flags and diff.
 */
export function renderPlan(plan: SwapPlan, opts: PlanMessageOptions): SlackMessage {
  const repo = plan.model.repo;
  const title = `Swap plan: ${truncate(repo, 100)} → ${truncate(plan.host.host, 40)}`;
  // The decision first: what it is, what stops and for how long, who may decide and until when, and
  // the buttons; the reasons (checks, flags, the unit diff) below it.
  const scale = plan.weightScale ?? 1;
  const bench = benchScaleLine(scale);
  const blocks: KnownBlock[] = [header(title), section(statusLine(plan, opts))];
  if (bench !== undefined) blocks.push(context(`🧪 ${bench}`));
  const basis = plan.downtimeBasis === undefined ? "" : `: ${prose(plan.downtimeBasis, 400)}`;
  // what will run is never the part Slack's limit cuts: the reasons before it give way
  const sources = sourceLines(plan).join("\n");
  const decision = [
    `*Stops* ${stopsLine(plan)}`,
    ...clientsLine(plan),
    plan.clients?.inPlace?.will === true
      ? `*Expected downtime* new requests wait about ${roughly(plan.expectedDowntimeSeconds)} for the load, and its health and sanity checks${basis}`
      : plan.clients?.blueGreen !== undefined
        ? `*Expected downtime* none: the new model loads (about ${roughly(plan.expectedDowntimeSeconds)}, health wait limit ${duration(plan.healthTimeoutSeconds)}${basis}) while the old one serves, and the flip is one front-door command${plan.clients?.blueGreen?.restart === undefined ? "" : `; the restart at full memory then holds new requests for about as long (none refused)`}`
        : `*Expected downtime* about ${roughly(plan.expectedDowntimeSeconds)} from stop to healthy (health wait limit ${duration(plan.healthTimeoutSeconds)})${basis}`,
  ].join("\n");
  blocks.push(
    section(`${truncate(decision, Math.max(200, LIMITS.sectionText - sources.length - 1))}\n${sources}`),
  );
  if (opts.status === "awaiting-approval" && plan.ok) {
    blocks.push(
      {
        type: "actions",
        block_id: "swap_decision",
        elements: [
          {
            type: "button",
            action_id: APPROVE_ACTION_ID,
            style: "primary",
            text: { type: "plain_text", text: "Approve", emoji: true },
            value: truncate(opts.swapId, 2000),
          },
          {
            type: "button",
            action_id: REJECT_ACTION_ID,
            style: "danger",
            text: { type: "plain_text", text: "Reject", emoji: true },
            value: truncate(opts.swapId, 2000),
          },
        ],
      },
      context("React ✅ to approve or ❌ to reject (approvers only; not the requester). The details follow."),
    );
  }

  const left = leftOnHub(plan.model);
  blocks.push(
    fields([
      [
        "Size",
        `${formatGB(realTotalBytes(plan.model, scale))} (${plan.model.files.length} files${scale === 1 ? "" : `; ${formatGB(plan.model.totalBytes)} at bench scale`}${left === undefined ? "" : `; ${left} (subfolders, pictures, media, PDFs, other weight formats)`})`,
      ],
      ["License", clean(plan.model.license ?? "not stated", 80)],
      ["Recipe", code(plan.recipe, 120)],
      ["GPUs", clean(describeGpus(plan.host), 300)],
      ["Tensor parallel", `tp ${plan.tp}: ${prose(plan.tpReason, 600)}`],
    ]),
  );

  blocks.push(...sections(checksLines(plan), 2));
  blocks.push(section(flagsLine(plan)));
  // notes are one sentence each (their workings are in the details)
  if (plan.notes.length > 0) {
    const notes = plan.notes.slice(0, MAX_NOTES_SHOWN).map((n) => `_${prose(oneLineNote(n), 400)}_`);
    const more = plan.notes.length - notes.length;
    blocks.push(
      ...sections(more > 0 ? [...notes, `_… and ${more} more notes in the details below_`] : notes, 1),
    );
  }
  blocks.push(section(unitLine(plan)));
  blocks.push(context(`swap \`${clean(opts.swapId, 100)}\` · requested by ${mention(opts.requester)}`));

  const failed = plan.checks.filter((c) => !c.ok).length;
  const text = `Swap plan: ${escapeMrkdwn(truncate(repo, 300))} → ${escapeMrkdwn(plan.host.host)}: ${STATUS_TEXT[opts.status]}${failed > 0 ? ` (${failed} failing ${failed === 1 ? "check" : "checks"})` : ""}`;
  return message(text, blocks);
}

/** What the plan message shows of long lists, so that it stays under 40 lines; the details hold the rest. */
const MAX_FAILED_SHOWN = 5;
const MAX_FLAGS_SHOWN = 16;
const MAX_NOTES_SHOWN = 3;

/** A note in one line: its first sentence, its parenthesised workings dropped ("…less than the 2.6 TiB it needs (4 × …)"). */
function oneLineNote(note: string): string {
  return firstSentence(note.replace(/\s*\([^()]*\)/g, ""));
}

/**
 * The checks: those that passed in one line, each failing one with its figures and its fix, and a disk
 * check that passes only by deleting old files after approval in full (the approver approves that too).
 */
function checksLines(plan: SwapPlan): string[] {
  const passed = plan.checks.filter((c) => c.ok);
  const failed = plan.checks.filter((c) => !c.ok);
  const shownFailed = failed.slice(0, MAX_FAILED_SHOWN);
  const more = failed.length - shownFailed.length;
  return [
    ...shownFailed.map(checkLine),
    ...passed.filter((c) => c.reclaimFirst === true).map(checkLine),
    ...(more > 0 ? [`✗ … and ${more} more failing, each with its fix in the details below`] : []),
    ...(passed.length === 0
      ? []
      : [
          `✓ *${passed.length} ${passed.length === 1 ? "check passes" : "checks pass"}*: ${passed.map((c) => clean(c.id, 40)).join(", ")} (their figures in the details below)`,
        ]),
  ];
}

/** The flags in one line, the ones every unit has left out; the command and each reason are in the details. */
function flagsLine(plan: SwapPlan): string {
  const always = new Set(["model-path", "served-model-name", "host", "port"]);
  const shown = plan.flags.filter((f) => f.positional !== true && !always.has(f.setting));
  const missing = plan.flags.filter((f) => f.flag === undefined);
  const env = (plan.env ?? []).map((e) => code(`${e.name}=${e.value}`, 120));
  const all = [...env, ...shown.map((f) => code(flagText(f), 120))];
  const list = [
    ...all.slice(0, MAX_FLAGS_SHOWN),
    ...(all.length > MAX_FLAGS_SHOWN ? [`and ${all.length - MAX_FLAGS_SHOWN} more`] : []),
  ].join(" ");
  const lacks =
    missing.length === 0
      ? ""
      : ` ⚠️ The engine build has no flag for ${missing.map((f) => clean(f.setting, 60)).join(", ")}.`;
  return truncate(
    `*Flags* ${list === "" ? "none beyond the model, its name, host and port" : list}.${lacks} The command and why each flag: in the details below.`,
    LIMITS.sectionText - 60,
  );
}

/** The unit, and how much its diff against the serving unit changes; the diff itself is in the details. */
function unitLine(plan: SwapPlan): string {
  if (plan.unitDiff === "") return `*Unit* ${code(plan.unitName)}: unchanged`;
  const { added, removed } = diffSize(plan.unitDiff);
  const current = plan.host.currentUnit;
  const against = current.exists ? code(current.name) : "nothing (a new unit)";
  return `*Unit* ${code(plan.unitName)}: +${added} −${removed} lines against ${against}; the diff is in the details below`;
}

const STATUS_TEXT: Record<PlanStatus, string> = {
  "awaiting-approval": "awaiting approval",
  approved: "approved",
  rejected: "rejected",
  expired: "expired",
  cancelled: "cancelled",
  refused: "refused",
  replaced: "replaced by a newer plan",
  "dry-run": "dry run",
};

function statusLine(plan: SwapPlan, opts: PlanMessageOptions): string {
  const by = opts.decidedBy === undefined ? "" : ` by ${mention(opts.decidedBy)}`;
  const failed = plan.checks.filter((c) => !c.ok).map((c) => c.id);
  switch (opts.status) {
    case "awaiting-approval":
      if (!plan.ok)
        return `:no_entry: *Cannot be approved*: failing ${failed.join(", ")}. Nothing was touched.`;
      return `:hourglass_flowing_sand: *Awaiting approval*${opts.waitingFor === undefined ? "" : ` from ${opts.waitingFor}`}${opts.expiresAt === undefined ? "" : ` until ${utcTime(opts.expiresAt)}`}. Nothing is touched until then; ${plan.engine?.buildAfterApproval === true ? "the download may already run, the engine build starts only after approval" : "the download and engine build may already run"}.`;
    case "approved":
      return `:white_check_mark: *Approved${by}*`;
    case "rejected":
      return `:x: *Rejected${by}*. Nothing was touched; downloaded files are kept.`;
    case "expired":
      return ":hourglass: *Expired*: nobody approved in time. Nothing was touched; downloaded files are kept.";
    case "cancelled":
      return `:raised_hand: *Cancelled${by}*. Nothing was touched; downloaded files are kept.`;
    case "refused":
      return `:no_entry: *Refused*: failing ${failed.length > 0 ? failed.join(", ") : "checks"}. Nothing was touched.`;
    case "replaced":
      return ":arrows_counterclockwise: *Replaced*: the plan changed; decide on the newer plan below. A decision here counts for nothing.";
    case "dry-run":
      return ":memo: *Dry run*: this is the plan; nothing will be done.";
  }
}

/**
 * What will run, first: the model's revision (a Hub pull request said so plainly), the engine's source
 * exactly (remote, ref, commit; a pull request said so plainly), and whether the model runs its own
 * Python: which files, named by which configs.
 */
function sourceLines(plan: SwapPlan): string[] {
  const { model } = plan;
  const sha = `\`${clean(model.sha.slice(0, 7), 7)}\``;
  const pr = hubPullRequest(model.revision);
  const lines = [
    pr !== undefined
      ? `:warning: *Model: Hub pull request #${pr}, not the repo's main*: ${code(model.repo)} @ ${code(model.revision)} (${sha}); anyone can open one`
      : model.revision === "main" || model.revision === model.sha
        ? `*Model* ${code(model.repo)} ${model.revision === "main" ? "main" : "commit"} @ ${sha}`
        : `*Model* ${code(model.repo)} @ ${code(model.revision)} (${sha})`,
  ];
  const engine = plan.engine;
  const setup = engineFor(plan.engineKind);
  if (engine !== undefined) {
    const at = `\`${clean(engine.commit.slice(0, 7), 7)}\``;
    const from = `of ${clean(engine.upstream, 300)}`;
    const ref = code(engine.fullRef ?? engine.ref);
    lines.push(
      engine.kind === "pull-request"
        ? `:warning: *Engine: pull request #${engine.pullRequest}* ${from} (${ref} at ${at}): anyone's code, fetched and built only after approval`
        : !engine.listed
          ? `:warning: *Engine: ${engine.kind} ${ref} at ${at}* ${from}: not a listed branch or tag (engine.allowedRefs), fetched and built only after approval`
          : engine.reused === true
            ? `*Engine* ${setup.packageName} ${engine.kind} ${code(engine.ref)} at ${at} ${from}: the build the serving unit runs, of this commit, reused (no rebuild; its --help is read again)`
            : `*Engine* ${setup.packageName} ${engine.kind} ${code(engine.ref)} at ${at} ${from}, built in a directory of its own: ${setup.describeBuild(engine.compileKernels === true)}`,
    );
  }
  const current = plan.host.currentUnit;
  const before = current.exists ? engineOfExecStart(current.execStart) : undefined;
  if (before !== undefined && before.kind !== setup.kind) {
    lines.push(
      `:twisted_rightwards_arrows: *Engine changes*: ${before.name} → ${setup.name} (the benchmark compares across engines: same prompts and concurrency)`,
    );
  }
  const remote = plan.facts.remoteCode;
  if (remote !== undefined) {
    // the files that will run, named from the repo's configs; bounded whatever the repo holds
    const style = { name: (t: string) => code(t, 120), text: (t: string) => clean(t, 120) };
    lines.push(
      `:warning: *Runs Python from the model repo* (--trust-remote-code): ${describeRemoteCode(remote, style, 600)}`,
    );
  } else if (plan.facts.needsRemoteCode) {
    lines.push(":warning: *Runs Python from the model repo* (config.json auto_map → --trust-remote-code)");
  }
  return lines;
}

/** "05:31 UTC", or "Dec 3 05:31 UTC" when it is not today's. */
function utcTime(iso: string): string {
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return "the approval window closes";
  const time = at.toISOString().slice(11, 16);
  return at.toISOString().slice(0, 10) === new Date().toISOString().slice(0, 10)
    ? `${time} UTC`
    : `${at.toISOString().slice(0, 10)} ${time} UTC`;
}

function stopsLine(plan: SwapPlan): string {
  const current = plan.host.currentUnit;
  const newUnit = code(plan.unitName);
  const bg = plan.clients?.blueGreen;
  if (bg !== undefined && current.exists)
    return `${code(current.name)} keeps serving until the flip, then drains and stops${bg.flipBackSeconds > 0 ? ` after the ${duration(bg.flipBackSeconds)} flip-back window` : ""}; ${newUnit} is enabled and started beside it first`;
  if (!current.exists)
    return `nothing: no ${code(current.name)} on the host; ${newUnit} will be enabled and started`;
  const state = current.active ? "running" : "not running";
  const inPlace = plan.clients?.inPlace;
  if (inPlace?.will === true)
    return `nothing: ${code(current.name)} (${state}) goes on running and loads the new weights in place${inPlace.mechanism === undefined ? "" : ` (${code(inPlace.mechanism, 64)})`}; its unit file gets the new model path once they pass their checks`;
  if (current.name === plan.unitName) {
    return `${newUnit} (${state}) is rewritten and restarted with the new model`;
  }
  if (plan.clients?.park?.will === true)
    return `${code(current.name)} (${state}) will be parked (its weights to host RAM) until the new model is released, then stopped; ${newUnit} enabled and started`;
  return `${code(current.name)} (${state}) will be disabled and stopped; ${newUnit} enabled and started`;
}
