import { escapeMrkdwn } from "../escape-mrkdwn.ts";
import { duration, durationSince } from "../format-duration.ts";
import { by } from "../grammar/person.ts";
import { context, header, LIMITS, message, type SlackMessage, section, truncate } from "../slack/blocks.ts";
import { clientImpact, impactText } from "../swap/client-impact.ts";
import type { SwapOutcome, SwapRecord } from "../swap/swap-record.ts";
import { changeText } from "./benchmark-table.ts";

/** One line of the ledger, as `/llm history` shows it. */
export interface HistoryRow {
  id: string;
  host: string;
  /** When the swap was requested (ISO). */
  at: string;
  requester: string;
  /** Who approved (Slack user id), when someone did. */
  approver?: string;
  /** Who rejected, when someone did. */
  rejecter?: string;
  model: string;
  /** The commit sha the revision resolved to, when resolve got that far. */
  sha?: string;
  /** The outcome, or `in progress` with the step it is at. */
  outcome: SwapOutcome | "in progress";
  step?: string;
  downtimeSeconds?: number;
  /** What clients saw (the front door's hold and the phases), when the switch got that far. */
  clients?: string;
  reason?: string;
  /** Output tok/s at concurrency 1 and loaded, for swaps that were benchmarked. */
  bench?: Headline;
  /** A succeeded swap whose benchmark could not run. */
  benchMissing?: boolean;
  /** One host of a rollout: its id and the host's wave (0: the canary), and where its files came from. */
  rollout?: { id: string; wave: number; files?: string };
  /** The model before on this host (the previous succeeded swap) and its numbers; undefined when unknown. */
  before?: { model: string; sha?: string; bench?: Headline };
}

export interface Headline {
  single?: number;
  loaded?: number;
  /** The loaded run's `--max-concurrency`. */
  loadedConcurrency?: number;
}

export interface HistoryOptions {
  /** The host asked for; undefined for every host. */
  host?: string;
  limit: number;
  /** Records of the ledger that could not be read (they do not match their schema): said, never shown. */
  unreadable?: number;
  /** "now", for the relative times (tests pin it). */
  now?: Date;
}

const OUTCOME: Record<HistoryRow["outcome"], string> = {
  succeeded: "✅ succeeded",
  rolled_back: "↩️ rolled back",
  failed: "❌ failed",
  rejected: "🚫 rejected",
  expired: "⌛ expired",
  cancelled: "✋ cancelled",
  planned: "📝 dry run",
  "in progress": "🔄 in progress",
};

/** Longest model name shown (Hub names can be ~100 characters; the whole row must stay short). */
const MODEL_CHARS = 100;
const REASON_CHARS = 160;

/** The ledger row of a record; `baseline` is the previous succeeded swap on its host, if there is one. */
export function historyRow(record: SwapRecord, baseline?: SwapRecord): HistoryRow {
  const row: HistoryRow = {
    id: record.id,
    host: record.host,
    at: record.createdAt,
    requester: record.requester,
    model: record.plan?.model.repo ?? record.model?.repo ?? record.request.model.repo,
    outcome: record.outcome ?? "in progress",
  };
  const sha = record.plan?.model.sha ?? record.model?.sha;
  if (sha !== undefined && sha !== "") row.sha = sha;
  if (record.outcome === undefined) row.step = record.step;
  if (record.decision !== undefined) {
    if (record.decision.approved) row.approver = record.decision.by;
    else row.rejecter = record.decision.by;
  }
  if (record.downtimeSeconds !== undefined) row.downtimeSeconds = record.downtimeSeconds;
  if (record.rollout !== undefined) {
    const copy = record.peerCopy;
    const files =
      copy?.state === "copied"
        ? `copied from ${copy.from}`
        : copy?.state === "hub"
          ? "from the Hub"
          : undefined;
    row.rollout = { ...record.rollout, ...(files === undefined ? {} : { files }) };
  }
  const impact = clientImpact(record);
  if (impact !== undefined) row.clients = impactText(impact);
  if (record.reason !== undefined && record.outcome !== "succeeded") row.reason = record.reason;
  const bench = headline(record.benchmark);
  if (bench !== undefined) row.bench = bench;
  else if (record.outcome === "succeeded") row.benchMissing = true;
  if (baseline !== undefined) {
    const before: NonNullable<HistoryRow["before"]> = {
      model: baseline.plan?.model.repo ?? baseline.request.model.repo,
    };
    const beforeSha = baseline.plan?.model.sha;
    if (beforeSha !== undefined && beforeSha !== "") before.sha = beforeSha;
    const beforeBench = headline(baseline.benchmark);
    if (beforeBench !== undefined) before.bench = beforeBench;
    row.before = before;
  }
  return row;
}

/** Output tok/s at concurrency 1 and loaded from a record's benchmark. */
export function headline(benchmark: SwapRecord["benchmark"]): Headline | undefined {
  if (benchmark === undefined) return undefined;
  const { single, loaded } = benchmark;
  const out: Headline = {};
  if (typeof single?.outputThroughput === "number") out.single = single.outputThroughput;
  if (typeof loaded?.outputThroughput === "number") out.loaded = loaded.outputThroughput;
  if (typeof loaded?.maxConcurrency === "number") out.loadedConcurrency = loaded.maxConcurrency;
  return out.single === undefined && out.loaded === undefined ? undefined : out;
}

/**
 * `/llm history`: the ledger newest first, one entry per swap — when, host, outcome; model and sha,
 * requester, approver, downtime; the benchmark headline (output tok/s at 1 stream and loaded) with its
 * change against the model before on the host. Entries are packed into sections of at most 3000
 * characters, so 50 entries with long model names fit Slack's 50 blocks.
 */
export function renderHistory(rows: readonly HistoryRow[], options: HistoryOptions): SlackMessage {
  const now = options.now ?? new Date();
  const scope = options.host === undefined ? "all hosts" : options.host;
  const title = `Swap history: ${scope}`;
  const unreadable = options.unreadable ?? 0;
  const warning = `⚠️ ${unreadable} ${unreadable === 1 ? "record" : "records"} could not be read (written by another modelswap version?); the bot's log names them`;
  if (rows.length === 0 && unreadable > 0) {
    // the ledger has swaps here, none of them readable: saying "none recorded" would hide them
    return message(`${title}: ${unreadable} unreadable`, [header(title), section(warning)]);
  }
  if (rows.length === 0) {
    const none =
      options.host === undefined
        ? "No swaps recorded yet."
        : `No swaps recorded for *${escapeMrkdwn(options.host)}* yet.`;
    return message(`${title}: no swaps recorded yet`, [header(title), section(none)]);
  }
  const entries = rows.map((row) => truncate(entry(row, now), LIMITS.sectionText));
  const blocks = [header(title)];
  // Header, the sections, and one context line at the end: leave room for both.
  const maxSections = LIMITS.blocks - 2;
  let current = "";
  let shown = 0;
  for (const text of entries) {
    const joined = current === "" ? text : `${current}\n\n${text}`;
    if (joined.length <= LIMITS.sectionText) {
      current = joined;
      shown += 1;
      continue;
    }
    if (blocks.length >= maxSections) break;
    blocks.push(section(current));
    current = text;
    shown += 1;
  }
  if (current !== "" && blocks.length <= maxSections) blocks.push(section(current));
  const notes = [
    `${shown === rows.length ? rows.length : `${shown} of ${rows.length}`} ${rows.length === 1 ? "swap" : "swaps"}, newest first (at most ${options.limit}; \`--limit N\` shows up to 50)`,
    "tok/s: output tokens per second at 1 stream and loaded; ▲/▼ vs the model before on the host",
  ];
  if (unreadable > 0) notes.push(warning);
  blocks.push(context(...notes));
  const fallback = [
    `${title} (newest first):`,
    ...rows
      .slice(0, shown)
      .map((row) => `${isoMinute(row.at)} ${row.host} ${row.outcome} ${shortModel(row)}`),
  ].join("\n");
  return message(fallback, blocks);
}

function entry(row: HistoryRow, now: Date): string {
  const at = new Date(row.at);
  const when = Number.isNaN(at.getTime())
    ? escapeMrkdwn(row.at)
    : `<!date^${Math.floor(at.getTime() / 1000)}^{date_short_pretty} {time}|${isoMinute(row.at)}> (${durationSince(at, now)} ago)`;
  const outcome = `${OUTCOME[row.outcome]}${row.step === undefined ? "" : ` (${row.step})`}`;
  const first = `*${when}* · *${escapeMrkdwn(row.host)}* · ${outcome}`;

  const people = [`asked${by(row.requester)}`];
  if (row.approver !== undefined) people.push(`approved${by(row.approver)}`);
  if (row.rejecter !== undefined) people.push(`rejected${by(row.rejecter)}`);
  const second = [
    `${code(truncate(row.model, MODEL_CHARS))}${row.sha === undefined ? "" : ` @ ${code(row.sha.slice(0, 7))}`}`,
    ...people,
    ...(row.downtimeSeconds === undefined ? [] : [`downtime ${duration(row.downtimeSeconds)}`]),
  ].join(" · ");
  const clients = row.clients === undefined ? [] : [`↳ clients: ${escapeMrkdwn(row.clients)}`];
  const rollout =
    row.rollout === undefined
      ? []
      : [
          `↳ rollout ${code(row.rollout.id)}, ${row.rollout.wave === 0 ? "the canary" : `wave ${row.rollout.wave + 1}`}${row.rollout.files === undefined ? "" : `; files ${escapeMrkdwn(row.rollout.files)}`}`,
        ];

  const lines = [first, second, ...rollout, ...clients];
  const bench = benchLine(row);
  if (bench !== undefined) lines.push(bench);
  if (row.reason !== undefined && row.outcome !== "rejected")
    lines.push(`↳ ${escapeMrkdwn(truncate(row.reason.replace(/\s+/g, " "), REASON_CHARS))}`);
  return lines.join("\n");
}

function benchLine(row: HistoryRow): string | undefined {
  if (row.bench === undefined) return row.benchMissing ? "📈 the benchmark did not run" : undefined;
  const before = row.before?.bench;
  const loadedLabel =
    row.bench.loadedConcurrency === undefined ? "loaded" : `${row.bench.loadedConcurrency} streams`;
  const part = (value: number | undefined, was: number | undefined, label: string) => {
    const change = before === undefined ? "" : changeText(value, was);
    return `${tokens(value)} tok/s at ${label}${change === "" ? "" : ` (${change})`}`;
  };
  const parts = [
    part(row.bench.single, before?.single, "1 stream"),
    part(row.bench.loaded, before?.loaded, loadedLabel),
  ];
  let against: string;
  if (row.before === undefined) against = "no earlier numbers on this host";
  else if (before === undefined)
    against = `no numbers for the model before (${code(truncate(row.before.model, MODEL_CHARS))})`;
  else
    against = `vs ${code(truncate(row.before.model, MODEL_CHARS))}${row.before.sha === undefined ? "" : ` @ ${code(row.before.sha.slice(0, 7))}`}`;
  return `📈 ${parts.join(" · ")} — ${against}`;
}

function tokens(value: number | undefined): string {
  if (value === undefined || !Number.isFinite(value)) return "–";
  return value >= 100 ? value.toFixed(0) : value.toFixed(1);
}

/** Inline code that cannot be broken out of. */
function code(text: string): string {
  return `\`${escapeMrkdwn(text).replaceAll("`", "'")}\``;
}

function shortModel(row: HistoryRow): string {
  return `${row.model}${row.sha === undefined ? "" : `@${row.sha.slice(0, 7)}`}`;
}

/** 2025-06-01 14:03 UTC */
function isoMinute(iso: string): string {
  const at = new Date(iso);
  return Number.isNaN(at.getTime()) ? iso : `${at.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}
