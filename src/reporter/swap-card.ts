import type { StageName, StageState, SwapRecord } from "../swap/swap-record.ts";
import { context, escapeMrkdwn, header, message, type SlackMessage, section } from "./message.ts";

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

/** The live card: the swap's parent message, edited in place as stages move. */
export function renderSwapCard(record: SwapRecord): SlackMessage {
  const repo = record.request.model.repo;
  const sha = record.plan?.model.sha.slice(0, 7);
  const title = `${record.outcome ? OUTCOME[record.outcome] : "🔄 Swapping"}: ${repo}${sha ? `@${sha}` : ""} → ${record.host}`;
  const lines = (Object.keys(LABEL) as StageName[]).map((name) => {
    const stage = record.stages[name];
    const detail = stage.detail ? ` — ${escapeMrkdwn(stage.detail)}` : "";
    return `${ICON[stage.state]} ${LABEL[name]}${detail}`;
  });
  const blocks = [header(title), section(lines.join("\n"))];
  if (record.reason) blocks.push(section(`*Why:* ${escapeMrkdwn(record.reason)}`));
  blocks.push(
    context(
      `swap \`${record.id}\` · requested by <@${record.requester}>${record.decision?.approved ? ` · approved by <@${record.decision.by}>` : ""}${record.downtimeSeconds !== undefined ? ` · downtime ${formatSeconds(record.downtimeSeconds)}` : ""} · details in the thread`,
    ),
  );
  const current = (Object.keys(LABEL) as StageName[]).find((n) => record.stages[n].state === "running");
  const text = `${title}${current ? ` (${LABEL[current]}${record.stages[current].detail ? `: ${record.stages[current].detail}` : ""})` : ""}`;
  return message(text, blocks);
}

export function formatSeconds(seconds: number): string {
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}
