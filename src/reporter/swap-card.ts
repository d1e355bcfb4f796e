import { describeEngineSource } from "../engine/engine-source.ts";
import { escapeMrkdwn } from "../escape-mrkdwn.ts";
import { duration } from "../format-duration.ts";
import { hubPullRequest } from "../grammar/model-ref.ts";
import { by } from "../grammar/person.ts";
import { context, header, LIMITS, message, type SlackMessage, section, truncate } from "../slack/blocks.ts";
import { clientImpact, impactText } from "../swap/client-impact.ts";
import type { StageName, StageState, SwapRecord } from "../swap/swap-record.ts";

const ICON: Record<StageState["state"], string> = {
  pending: "○",
  running: "⏳",
  done: "✅",
  failed: "❌",
  skipped: "➖",
};

export const STAGE_LABEL: Record<StageName, string> = {
  resolve: "Resolve on the Hub",
  preflight: "Preflight and plan",
  download: "Download",
  build: "Engine build",
  approval: "Approval",
  switch: "Switch service",
  health: "Health",
  sanity: "Sanity check",
  benchmark: "Benchmark",
  finish: "Finish",
};

const OUTCOME: Record<NonNullable<SwapRecord["outcome"]>, string> = {
  succeeded: "✅ Swapped",
  rolled_back: "↩️ Rolled back",
  failed: "❌ Failed",
  rejected: "🚫 Rejected",
  expired: "⌛ Approval expired",
  cancelled: "✋ Cancelled",
  planned: "📝 Dry run: plan only",
};

/** What clients saw, once the switch has stopped the old unit: held by the front door, or downtime. */
function clientsPart(record: SwapRecord): string {
  const impact = clientImpact(record);
  if (impact !== undefined && impact.mode !== "refused") return ` · clients: ${impactText(impact)}`;
  return record.downtimeSeconds !== undefined ? ` · downtime ${duration(record.downtimeSeconds)}` : "";
}

/** Each stage line stays short, so every stage fits the card's one section. */
const STAGE_DETAIL_MAX = 250;
const REASON_MAX = 2500;

/** The live card: the swap's parent message, edited in place as stages move. */
export function renderSwapCard(record: SwapRecord): SlackMessage {
  const repo = record.request.model.repo;
  const sha = record.plan?.model.sha.slice(0, 7);
  const outcome = record.outcome
    ? OUTCOME[record.outcome]
    : record.request.dryRun
      ? "📝 Planning (dry run)"
      : "🔄 Swapping";
  const model = `${repo}${sha ? `@${sha}` : ""}`;
  const title = `${outcome}: ${model} → ${record.host}`;
  // The header holds 150 characters: a long model name is cut there (never the host), and named in full below.
  const host = truncate(record.host, 60);
  const room = LIMITS.headerText - `${outcome}:  → ${host}`.length;
  const shortModel = truncate(model, room);
  const lines = (Object.keys(STAGE_LABEL) as StageName[]).map((name) => {
    const stage = record.stages[name];
    // the reason a swap failed is said once on the card, in its *Why:* line
    const said = stage.state === "failed" && stage.detail === record.reason;
    const detail =
      stage.detail && !said ? ` — ${escapeMrkdwn(truncate(stage.detail, STAGE_DETAIL_MAX))}` : "";
    // who decided is named from the record's ids (stage details are plain text, always escaped)
    const who = name === "approval" ? decidedBy(record) : "";
    return `${ICON[stage.state]} ${STAGE_LABEL[name]}${who}${detail}`;
  });
  const blocks = [header(`${outcome}: ${shortModel} → ${host}`)];
  if (shortModel !== model) blocks.push(context(`model \`${escapeMrkdwn(model)}\``));
  const source = sourceLine(record);
  if (source !== undefined) blocks.push(context(source));
  blocks.push(section(lines.join("\n")));
  if (record.reason) {
    const code = record.failure === undefined ? "" : ` (${escapeMrkdwn(record.failure.code)})`;
    blocks.push(section(`*Why:* ${escapeMrkdwn(truncate(record.reason, REASON_MAX))}${code}`));
  }
  blocks.push(
    context(`swap \`${record.id}\` · ${people(record)}${clientsPart(record)} · details in the thread`),
  );
  const current = (Object.keys(STAGE_LABEL) as StageName[]).find((n) => record.stages[n].state === "running");
  const text = `${title}${current ? ` (${STAGE_LABEL[current]}${record.stages[current].detail ? `: ${truncate(record.stages[current].detail, STAGE_DETAIL_MAX)}` : ""})` : ""}`;
  return message(text, blocks);
}

/**
 * What runs, in one line, once there is a plan: the model's revision and the engine source exactly, a
 * pull request (Hub or engine) flagged.
 */
function sourceLine(record: SwapRecord): string | undefined {
  const plan = record.plan;
  if (plan === undefined) return undefined;
  const pr = hubPullRequest(plan.model.revision);
  const model =
    pr !== undefined
      ? `:warning: model: Hub pull request #${pr}, not the repo's main`
      : `model revision \`${escapeMrkdwn(truncate(plan.model.revision, 80).replaceAll("`", "ˋ"))}\``;
  if (plan.engine === undefined) return model;
  const engine = escapeMrkdwn(truncate(describeEngineSource(plan.engine), 400));
  return `${model} · ${plan.engine.listed ? "" : ":warning: "}engine: ${engine}`;
}

/** "approved by <@U…>" or "rejected by …", from the record; "" when nobody decided. */
function decidedBy(record: SwapRecord): string {
  if (record.decision === undefined) return "";
  return ` ${record.decision.approved ? "approved" : "rejected"}${by(record.decision.by)}`;
}

/** Who did what, for the card's last line. */
function people(record: SwapRecord): string {
  const parts = [`requested${by(record.requester)}`];
  if (record.decision !== undefined) parts.push(decidedBy(record).trim());
  if (record.cancel !== undefined) parts.push(`cancelled${by(record.cancel.by)}`);
  return parts.join(" · ");
}
