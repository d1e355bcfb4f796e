import type { BenchResult } from "../engine/bench-serving.ts";
import { ENGINE_NAMES, type EngineKind } from "../engine/engine-kind.ts";
import { escapeMrkdwn } from "../escape-mrkdwn.ts";
import { context, LIMITS, type SlackMessage, section, truncate } from "../slack/blocks.ts";

export interface BenchPair {
  single: BenchResult;
  loaded: BenchResult;
}

export interface PreviousBench {
  /** The model those numbers were measured with (the outgoing one). */
  model: string;
  single: BenchResult;
  /** Absent for a single-stream baseline probe. */
  loaded?: BenchResult | undefined;
  /** The last swap's benchmark (default), or a baseline taken before this switch. */
  basis?: "last-swap" | "probe" | "full" | undefined;
  /** The engine it ran on. */
  engine: EngineKind;
}

/** Longer than any Hub repo id (two parts of at most 96 characters): names are shown whole. */
const MODEL_MAX = 200;

interface Metric {
  label: string;
  pick: (r: BenchResult) => number | undefined;
  /** Throughput: more is better; latencies: less is. */
  higherIsBetter: boolean;
}

/**
 * One layout for every swap: the same rows in the same order, whatever the engine measured (a value it
 * did not measure is "–"), and the same two columns, the loaded one's concurrency said below the table.
 */
const METRICS: readonly Metric[] = [
  { label: "output tok/s", pick: (r) => r.outputThroughput, higherIsBetter: true },
  { label: "TTFT p50 ms", pick: (r) => r.medianTtftMs, higherIsBetter: false },
  { label: "TTFT p99 ms", pick: (r) => r.p99TtftMs, higherIsBetter: false },
  { label: "TPOT ms", pick: (r) => r.meanTpotMs, higherIsBetter: false },
  { label: "ITL ms (mean)", pick: (r) => r.meanItlMs, higherIsBetter: false },
];

/** What the numbers are of: the model now, and the engine it ran on. */
export interface BenchmarkAbout {
  /** The new model, `org/name` or `org/name@sha`. */
  model?: string | undefined;
  engine?: EngineKind | undefined;
}

/** `org/name` of a model as the ledger, a baseline or a plan names it (`org/name@sha`, any case). */
function repoOf(model: string): string {
  return model.split("@")[0]!.trim().toLowerCase();
}

/**
 * Whether a comparison says "better" or "worse": only of like with like, the same model (a new revision
 * of it) at the same load. A 397B MoE against the 8B it replaced is two models, not one that improved.
 */
export function sameModel(previous: string, now: string | undefined): boolean {
  return now !== undefined && repoOf(previous) === repoOf(now);
}

/**
 * The benchmark as a compact monospace table: output tok/s, TTFT p50/p99, TPOT and ITL at one stream and
 * loaded, each with its change against the previous numbers on this host (▲ up, ▼ down), judged better or
 * worse only when they are of the same model at the same load, or a note that there are no earlier numbers.
 */
export function renderBenchmarkComparison(
  current: BenchPair,
  previous?: PreviousBench,
  about: BenchmarkAbout = {},
): SlackMessage {
  const likeModel = previous !== undefined && sameModel(previous.model, about.model);
  const columns = [
    { title: "1 stream", now: current.single, before: previous?.single },
    {
      title: "loaded",
      now: current.loaded,
      // a loaded run at another concurrency is another test: shown, never compared
      before:
        previous?.loaded?.maxConcurrency === current.loaded.maxConcurrency ? previous?.loaded : undefined,
    },
  ];
  // One cell per setting: the value, then its change (judged when like with like), padded so they line up.
  const cells = columns.map((c) => {
    const values = METRICS.map((m) => formatNumber(m.pick(c.now)));
    const changes = METRICS.map((m) =>
      c.before === undefined
        ? ""
        : likeModel
          ? judged(m, m.pick(c.now), m.pick(c.before))
          : changeText(m.pick(c.now), m.pick(c.before)),
    );
    const valueWidth = Math.max(...values.map(width));
    const changeWidth = Math.max(...changes.map(width));
    return values.map((v, i) => (changeWidth === 0 ? v : `${pad(v, valueWidth)} ${changes[i] ?? ""}`));
  });
  const rows: string[][] = [
    ["", ...columns.map((c) => c.title)],
    ...METRICS.map((m, i) => [m.label, ...cells.map((col) => col[i] ?? "")]),
  ];
  const table = alignColumns(rows);

  const model = previous === undefined ? undefined : truncate(previous.model, MODEL_MAX);
  const notes: string[] = [];
  notes.push(
    model === undefined
      ? "no earlier numbers for this host"
      : likeModel
        ? `▲/▼: change vs the same model's last numbers here (\`${escapeMrkdwn(model.replaceAll("`", "'"))}\`), said better or worse (higher tok/s and lower ms are better)`
        : `⚖️ across models: ▲/▼ compare \`${escapeMrkdwn(model.replaceAll("`", "'"))}\` then with ${about.model === undefined ? "the model now" : `\`${escapeMrkdwn(truncate(about.model, MODEL_MAX).replaceAll("`", "'"))}\``} now: two different models, so neither better nor worse is said`,
  );
  notes.push(`loaded: ${loadedStreams(current.loaded)}`);
  const previousLoaded = previous?.loaded?.maxConcurrency;
  if (previous?.loaded !== undefined && previousLoaded !== current.loaded.maxConcurrency)
    notes.push(
      `the loaded run is not compared: ${loadedStreams(current.loaded)} now, ${loadedStreams(previous.loaded)} then`,
    );
  if (previous !== undefined && about.engine !== undefined && previous.engine !== about.engine)
    notes.push(
      `⚖️ across engines: ${ENGINE_NAMES[previous.engine]} then, ${ENGINE_NAMES[about.engine]} now, each measured with its own client (the same prompts, lengths and concurrency)`,
    );
  if (previous?.basis === "probe" || previous?.basis === "full") {
    notes.push(
      previous.basis === "probe"
        ? "baseline: the outgoing model's single-stream run just before the switch (swaps.baseline: probe; the loaded run is not taken on production)"
        : "baseline: the outgoing model's single-stream and loaded runs just before the switch (swaps.baseline: full)",
    );
  }
  for (const c of columns) {
    const ok = c.now.successfulRequests;
    if (c.now.requested !== undefined && ok !== undefined && ok < c.now.requested)
      notes.push(`⚠️ ${c.title}: ${c.now.requested - ok} of ${c.now.requested} requests failed`);
  }

  const fence = "```";
  const blocks = [
    section("*Benchmark*"),
    section(`${fence}\n${truncate(table, LIMITS.sectionText - 8)}\n${fence}`),
    context(...notes),
  ];
  return { text: truncate(fallbackText(columns, model), LIMITS.fallbackText), blocks };
}

function loadedStreams(result: BenchResult): string {
  return streams(result.maxConcurrency, "concurrency not reported");
}

export function streams(concurrency: number | null | undefined, fallback: string): string {
  if (concurrency === undefined || concurrency === null) return fallback;
  return concurrency === 1 ? "1 stream" : `${concurrency} streams`;
}

/** ▲8.7% / ▼3.1% / ±0.0%, or "" when either number is missing. */
export function changeText(now: number | undefined, before: number | undefined): string {
  if (now === undefined || before === undefined || !Number.isFinite(now) || !Number.isFinite(before))
    return "";
  if (before === 0) return "";
  const pct = ((now - before) / Math.abs(before)) * 100;
  const size = Math.abs(pct);
  const shown = size >= 100 ? size.toFixed(0) : size.toFixed(1);
  if (shown === "0.0") return "±0.0%";
  return `${pct > 0 ? "▲" : "▼"}${shown}%`;
}

/** "▲8.7% better", "▼3.1% worse", "±0.0%", or "" without both numbers. */
function judged(metric: Metric, now: number | undefined, before: number | undefined): string {
  const change = changeText(now, before);
  if (change === "" || change === "±0.0%" || now === undefined || before === undefined) return change;
  return `${change} ${now > before === metric.higherIsBetter ? "better" : "worse"}`;
}

export function formatNumber(value: number | undefined): string {
  if (value === undefined || Number.isNaN(value)) return "–";
  if (!Number.isFinite(value)) return value > 0 ? "inf" : "-inf";
  const size = Math.abs(value);
  if (size >= 1000) return value.toFixed(0);
  if (size >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

/** Characters as a monospace font shows them (▲ is one). */
function width(text: string): number {
  return [...text].length;
}

function pad(text: string, to: number): string {
  return text + " ".repeat(Math.max(0, to - width(text)));
}

/** Left-aligned columns separated by two spaces, no trailing blanks. */
function alignColumns(rows: readonly string[][]): string {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, width(cell));
    });
  }
  return rows
    .map((row) =>
      row
        .map((cell, i) => pad(cell, widths[i] ?? 0))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

function fallbackText(
  columns: readonly { title: string; now: BenchResult; before?: BenchResult | undefined }[],
  model: string | undefined,
): string {
  const parts = columns.map((c) => {
    const tps = formatNumber(c.now.outputThroughput);
    const change = model === undefined ? "" : changeText(c.now.outputThroughput, c.before?.outputThroughput);
    const at = c.title === "loaded" ? streams(c.now.maxConcurrency, "loaded") : c.title;
    return `${tps} output tok/s at ${at}${change === "" ? "" : ` (${change})`}`;
  });
  const ttft = columns.map((c) => formatNumber(c.now.medianTtftMs)).join(" / ");
  const itl = columns.every((c) => c.now.meanTpotMs === undefined);
  const perToken = columns.map((c) => formatNumber(itl ? c.now.meanItlMs : c.now.meanTpotMs)).join(" / ");
  const against = model === undefined ? "no earlier numbers for this host" : `vs ${model}`;
  return `Benchmark: ${parts.join(", ")}; TTFT p50 ${ttft} ms; ${itl ? "ITL (mean)" : "TPOT"} ${perToken} ms (${against})`;
}
