import { ESCAPED_MENTION } from "../grammar/slack-ids.ts";
import type { StageName, StageState, SwapRecord } from "../swap/swap-record.ts";
import {
  context,
  escapeMrkdwn,
  header,
  LIMITS,
  message,
  type SlackMessage,
  section,
  truncate,
} from "./message.ts";

const ICON: Record<StageState["state"], string> = {
  pending: "○",
  running: "⏳",
  done: "✅",
  failed: "❌",
  skipped: "➖",
};

const LABEL: Record<StageName, string> = {
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

/** Each stage line stays short, so every stage fits the card's one section. */
const STAGE_DETAIL_MAX = 250;
const REASON_MAX = 2500;

/** The live card: the swap's parent message, edited in place as stages move. */
export function renderSwapCard(record: SwapRecord): SlackMessage {
  const repo = record.request.model.repo;
  const sha = record.plan?.model.sha.slice(0, 7);
  const outcome = record.outcome ? OUTCOME[record.outcome] : "🔄 Swapping";
  const model = `${repo}${sha ? `@${sha}` : ""}`;
  const title = `${outcome}: ${model} → ${record.host}`;
  // The header holds 150 characters: a long model name is cut there (never the host), and named in full below.
  const host = truncate(record.host, 60);
  const room = LIMITS.headerText - `${outcome}:  → ${host}`.length;
  const shortModel = truncate(model, room);
  const lines = (Object.keys(LABEL) as StageName[]).map((name) => {
    const stage = record.stages[name];
    const detail = stage.detail
      ? ` — ${escapeKeepingMentions(truncate(stage.detail, STAGE_DETAIL_MAX))}`
      : "";
    return `${ICON[stage.state]} ${LABEL[name]}${detail}`;
  });
  const blocks = [header(`${outcome}: ${shortModel} → ${host}`)];
  if (shortModel !== model) blocks.push(context(`model \`${escapeMrkdwn(model)}\``));
  blocks.push(section(lines.join("\n")));
  if (record.reason)
    blocks.push(section(`*Why:* ${escapeKeepingMentions(truncate(record.reason, REASON_MAX))}`));
  blocks.push(
    context(
      `swap \`${record.id}\` · requested by <@${record.requester}>${record.decision?.approved ? ` · approved by <@${record.decision.by}>` : ""}${record.downtimeSeconds !== undefined ? ` · downtime ${formatSeconds(record.downtimeSeconds)}` : ""} · details in the thread`,
    ),
  );
  const current = (Object.keys(LABEL) as StageName[]).find((n) => record.stages[n].state === "running");
  const text = `${title}${current ? ` (${LABEL[current]}${record.stages[current].detail ? `: ${truncate(record.stages[current].detail, STAGE_DETAIL_MAX)}` : ""})` : ""}`;
  return message(text, blocks);
}

export function formatSeconds(seconds: number): string {
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

/**
 * Stage details and reasons quote errors and logs (escaped), but also name people ("approved by <@U…>"):
 * a user mention survives the escaping, so Slack shows the name instead of the raw `<@U…>`. Channel-wide
 * pings (`<!channel>`) and links stay escaped.
 */
function escapeKeepingMentions(text: string): string {
  return escapeMrkdwn(text).replace(ESCAPED_MENTION, "<@$1>");
}
