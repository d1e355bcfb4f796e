import type { KnownBlock } from "@slack/types";
import { engineFor, engineOfExecStart } from "../engine/engines.ts";
import { APPROVE_ACTION_ID, REJECT_ACTION_ID } from "../grammar/action-ids.ts";
import { hubPullRequest } from "../grammar/model-ref.ts";
import { mention as userMention } from "../grammar/slack-ids.ts";
import { formatGB, formatGiB } from "../plan/byte-units.ts";
import { describeGpus } from "../plan/make-plan.ts";
import type { FlagChoice, SwapPlan } from "../plan/types.ts";
import { benchScaleLine, realTotalBytes } from "../plan/weight-scale.ts";
import {
  context,
  escapeMrkdwn,
  fields,
  header,
  LIMITS,
  message,
  type SlackMessage,
  section,
  truncate,
} from "../reporter/message.ts";

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
 * How clients see the swap, before the approver decides: cold means the model is not served while the new
 * one loads; behind a front door requests wait instead of failing, within the hold's bound.
 */
function clientsLine(plan: SwapPlan): string[] {
  const c = plan.clients;
  if (c === undefined) return [];
  if (c.blueGreen !== undefined && c.frontDoor !== undefined)
    return blueGreenLines(c.blueGreen, c.frontDoor, c.why, plan.expectedDowntimeSeconds);
  const drain = `requests in flight finish first (up to ${minutes(c.drainSeconds)})`;
  const why = [
    ...(c.why === undefined ? [] : [`*Why cold* ${clean(c.why, 500)}`]),
    ...(c.preload === undefined
      ? []
      : [`*Page cache* ${c.preload.will ? "yes" : "no"}: ${clean(c.preload.why, 300)}`]),
    ...(c.park === undefined
      ? []
      : [`*Old model* ${c.park.will ? "parked, not stopped" : "stopped"}: ${clean(c.park.why, 500)}`]),
  ];
  const load = plan.expectedDowntimeSeconds;
  if (c.frontDoor === undefined)
    return [
      `*Clients* cold swap, no front door: ${drain}, then new requests fail (connection refused) for about ${minutes(load)} until the new model is healthy. A front door would hold them instead (docs/front-door.md).`,
      ...why,
    ];
  const fd = c.frontDoor;
  const past =
    load > fd.holdSeconds
      ? ` The load is expected to take longer than the hold: a request held past ${minutes(fd.holdSeconds)} gets 503 \`front_door_hold_expired\`.`
      : "";
  return [
    `*Clients* cold swap behind the front door (HAProxy: slot ${code(fd.from ?? fd.server, 64)} drains, ${code(fd.hold, 64)} holds${(fd.from ?? fd.server) === fd.server ? "" : `, the new model on slot ${code(fd.server, 64)}`}): ${drain}; new requests are held (up to ${minutes(fd.holdSeconds)}) while the new model loads, and sent to it once it is healthy and sane.${past === "" ? " None fails." : past}`,
    ...why,
  ];
}

/** A blue/green plan's client lines: where the new unit runs, how it is checked, the flip and its window. */
function blueGreenLines(
  bg: NonNullable<NonNullable<SwapPlan["clients"]>["blueGreen"]>,
  fd: NonNullable<NonNullable<SwapPlan["clients"]>["frontDoor"]>,
  why: string | undefined,
  loadSeconds: number,
): string[] {
  const gpus = `GPU${bg.devices.length === 1 ? "" : "s"} ${bg.devices.join(",")}`;
  const how = bg.gpus === "spare" ? "on spare GPUs" : "sharing GPUs";
  const bench =
    bg.benchmark === "before-flip"
      ? "health, sanity and the benchmark"
      : bg.benchmark === "reduced"
        ? "health, sanity and the benchmark at 4 streams (production shares these GPUs)"
        : "health and sanity (the benchmark runs after the flip: production shares these GPUs)";
  const restart =
    bg.restart === undefined
      ? " until its next restart"
      : `; once the old one has stopped, it restarts at full memory (swaps.restartAtFullMemory) behind the front door's hold: new requests wait for its load (about ${minutes(loadSeconds)}${loadSeconds > fd.holdSeconds ? `, longer than the hold's ${minutes(fd.holdSeconds)}: requests past it get 503` : ""}), none fails`;
  const kv =
    bg.gpus === "shared"
      ? ` It serves with a ${formatGiB(bg.kvPerGpuBytes)}/GPU KV cache (${formatGiB(bg.fullKvPerGpuBytes)} alone)${restart}.`
      : "";
  const window =
    bg.flipBackSeconds > 0
      ? ` For ${minutes(bg.flipBackSeconds)} after the flip the old model stays loaded: \`/llm cancel\` or \`/llm rollback\` flips back in about a second.`
      : " The old model stops as soon as it has drained (swaps.flipBackSeconds is 0: no flip back).";
  return [
    `*Clients* blue/green ${how} behind the front door (HAProxy: ${code(fd.server, 64)} takes new requests at the flip, ${code(fd.from ?? "?", 64)} drains): the new model loads on ${gpus} (port ${bg.port}) beside the one serving now and is checked there (${bench}); then the front door flips. No request waits or fails.${kv}${window}`,
    ...(why === undefined ? [] : [`*Why blue/green* ${clean(why, 500)}`]),
  ];
}

/** Untrusted names are cut before escaping, so an escape entity is never cut in half. */
const NAME_MAX = 200;
const FLAG_BULLETS_MAX_SECTIONS = 3;

/** Untrusted text in mrkdwn: escaped, and without backticks, which could open a code span or block. */
const clean = (text: string, max = NAME_MAX): string =>
  escapeMrkdwn(truncate(text, max)).replaceAll("`", "ˋ");
const code = (text: string, max = NAME_MAX): string => `\`${clean(text, max)}\``;
const mention = (id: string): string => userMention(id) ?? clean(id, 80);

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
  const basis = plan.downtimeBasis === undefined ? "" : `: ${clean(plan.downtimeBasis, 300)}`;
  blocks.push(
    section(
      [
        `*Stops* ${stopsLine(plan)}`,
        ...clientsLine(plan),
        plan.clients?.blueGreen !== undefined
          ? `*Expected downtime* none: the new model loads (about ${minutes(plan.expectedDowntimeSeconds)}, health wait limit ${minutes(plan.healthTimeoutSeconds)}${basis}) while the old one serves, and the flip is one front-door command${plan.clients?.blueGreen?.restart === undefined ? "" : `; the restart at full memory then holds new requests for about as long (none refused)`}`
          : `*Expected downtime* about ${minutes(plan.expectedDowntimeSeconds)} from stop to healthy (health wait limit ${minutes(plan.healthTimeoutSeconds)})${basis}`,
        ...sourceLines(plan),
      ].join("\n"),
    ),
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

  blocks.push(
    fields([
      [
        "Size",
        `${formatGB(realTotalBytes(plan.model, scale))} (${plan.model.files.length} files${scale === 1 ? "" : `; ${formatGB(plan.model.totalBytes)} at bench scale`})`,
      ],
      ["License", clean(plan.model.license ?? "not stated", 80)],
      ["Recipe", code(plan.recipe, 120)],
      ["GPUs", clean(describeGpus(plan.host), 300)],
      ["Tensor parallel", `tp ${plan.tp}: ${clean(plan.tpReason, 600)}`],
    ]),
  );

  blocks.push(...sections(["*Checks*", ...plan.checks.map(checkLine)], 3));
  blocks.push(section(`*Flags*\n${commandBlock(plan)}`));
  const why = [
    ...(plan.env ?? []).map((e) => `• ${code(`${e.name}=${e.value}`, 300)}: ${clean(e.reason, 500)}`),
    ...plan.flags.map((f) => `• ${code(flagText(f), 300)}: ${clean(f.reason, 500)}`),
  ];
  blocks.push(...sections(why, FLAG_BULLETS_MAX_SECTIONS));
  // notes are one line each: the plan's reasons are above
  if (plan.notes.length > 0)
    blocks.push(
      ...sections(
        plan.notes.map((n) => `_${clean(oneLineNote(n), 300)}_`),
        1,
      ),
    );

  const diffTitle = plan.unitDiff === "" ? "unchanged" : "diff against the unit serving now";
  blocks.push(section(`*Unit* ${code(plan.unitName)} (${diffTitle})`));
  if (plan.unitDiff !== "") blocks.push(section(headCodeBlock(plan.unitDiff.replace(/\n$/, "").split("\n"))));
  blocks.push(context(`swap \`${clean(opts.swapId, 100)}\` · requested by ${mention(opts.requester)}`));

  const failed = plan.checks.filter((c) => !c.ok).length;
  const text = `Swap plan: ${escapeMrkdwn(truncate(repo, 300))} → ${escapeMrkdwn(plan.host.host)}: ${STATUS_TEXT[opts.status]}${failed > 0 ? ` (${failed} failing ${failed === 1 ? "check" : "checks"})` : ""}`;
  return message(text, blocks);
}

/** A note in one line: its parenthesised workings dropped ("…less than the 2.6 TiB it needs (4 × …)"). */
function oneLineNote(note: string): string {
  return truncate(note.replace(/\s*\([^()]*\)/g, "").replace(/\.$/, ""), 160);
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
 * exactly (remote, ref, commit; a pull request said so plainly), and whether the model runs its own Python.
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
  if (plan.facts.needsRemoteCode) {
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

function checkLine(check: SwapPlan["checks"][number]): string {
  const head = `${check.ok ? "✓" : "✗"} *${clean(check.id, 40)}*: ${clean(check.detail, 600)}`;
  return check.ok || check.fix === undefined ? head : `${head}\n      _Fix:_ ${clean(check.fix, 600)}`;
}

function flagText(flag: FlagChoice): string {
  if (flag.positional === true) return flag.value ?? "";
  const name = flag.flag ?? `(no flag for ${flag.setting})`;
  return flag.value === undefined ? name : `${name} ${flag.value}`;
}

/** Shell-like quoting for reading only (the unit has systemd's own). */
function shown(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

function commandBlock(plan: SwapPlan): string {
  const setup = engineFor(plan.engineKind);
  const positional = plan.flags.filter((f) => f.positional === true && f.value !== undefined);
  const flags = plan.flags.filter((f) => f.positional !== true);
  const lines = [
    ...(plan.env ?? []).map((e) => `${e.name}=${shown(e.value)}`),
    ["python", ...setup.entryPoint, ...positional.map((f) => shown(f.value!))].join(" "),
  ];
  for (const f of flags) {
    const name = f.flag ?? `# missing: ${f.setting}`;
    lines.push(`  ${name}${f.value === undefined ? "" : ` ${shown(f.value)}`}`);
  }
  const continued = lines.map((l, i) => (i < lines.length - 1 && !l.includes("# missing") ? `${l} \\` : l));
  return headCodeBlock(continued, LIMITS.sectionText - 20);
}

/** A code block of the first lines that fit (escaped for mrkdwn), saying how many were left out. */
function headCodeBlock(lines: readonly string[], max: number = LIMITS.sectionText): string {
  const fence = "```";
  const rendered = lines.map((l) => escapeMrkdwn(truncate(l, 300).replaceAll("```", "ˋˋˋ")));
  const budget = max - fence.length * 2 - 2 - 40;
  const kept: string[] = [];
  let size = 0;
  for (const line of rendered) {
    if (size + line.length + 1 > budget) break;
    kept.push(line);
    size += line.length + 1;
  }
  const left = rendered.length - kept.length;
  if (left > 0) kept.push(`… ${left} more ${left === 1 ? "line" : "lines"}`);
  return `${fence}\n${kept.join("\n")}\n${fence}`;
}

/** Lines packed into at most `maxSections` sections of Slack's size, the rest counted. */
function sections(lines: readonly string[], maxSections: number): KnownBlock[] {
  const budget = LIMITS.sectionText - 60;
  const packs: string[] = [];
  let current = "";
  let used = 0;
  for (const line of lines) {
    const piece = truncate(line, budget);
    if (current !== "" && current.length + 1 + piece.length > budget) {
      if (packs.length + 1 === maxSections) break;
      packs.push(current);
      current = "";
    }
    current = current === "" ? piece : `${current}\n${piece}`;
    used++;
  }
  if (used < lines.length) current += `\n… and ${lines.length - used} more`;
  if (current !== "") packs.push(current);
  return packs.map((text) => section(text));
}

function stopsLine(plan: SwapPlan): string {
  const current = plan.host.currentUnit;
  const newUnit = code(plan.unitName);
  const bg = plan.clients?.blueGreen;
  if (bg !== undefined && current.exists)
    return `${code(current.name)} keeps serving until the flip, then drains and stops${bg.flipBackSeconds > 0 ? ` after the ${minutes(bg.flipBackSeconds)} flip-back window` : ""}; ${newUnit} is enabled and started beside it first`;
  if (!current.exists)
    return `nothing: no ${code(current.name)} on the host; ${newUnit} will be enabled and started`;
  const state = current.active ? "running" : "not running";
  if (current.name === plan.unitName) {
    return `${newUnit} (${state}) is rewritten and restarted with the new model`;
  }
  return `${code(current.name)} (${state}) will be disabled and stopped; ${newUnit} enabled and started`;
}

function minutes(seconds: number): string {
  if (seconds < 90) return `${Math.round(seconds)} s`;
  return `${Math.round(seconds / 60)} min`;
}
