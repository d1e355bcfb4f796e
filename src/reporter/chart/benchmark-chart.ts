import type { BenchResult } from "../../engine/bench-serving.ts";
import { truncate } from "../../slack/blocks.ts";
import {
  type BenchPair,
  changeText,
  formatNumber,
  type PreviousBench,
  renderBenchmarkComparison,
  sameModel,
  streams,
} from "../benchmark-table.ts";
import { type BarPanel, barChartSvg, COLOR, FONT_FAMILY } from "./bar-chart.ts";
import { svgToPng } from "./svg-to-png.ts";

export interface BenchmarkChart {
  png: Buffer;
  width: number;
  height: number;
  filename: string;
  /** The file's title in Slack. */
  title: string;
  /** For screen readers (Slack takes up to 1000 characters). */
  altText: string;
}

interface Metric {
  title: string;
  pick: (r: BenchResult) => number | undefined;
  higherIsBetter: boolean;
}

/** What people compare first: throughput, time to the first token, time per token after it. */
const METRICS: readonly Metric[] = [
  { title: "Output tok/s", pick: (r) => r.outputThroughput, higherIsBetter: true },
  { title: "TTFT p50 ms", pick: (r) => r.medianTtftMs, higherIsBetter: false },
  { title: "TPOT ms", pick: (r) => r.meanTpotMs, higherIsBetter: false },
];

/**
 * The benchmark comparison as a bar chart (an SVG drawn to PNG by resvg): a row per load setting (1 stream, loaded), a panel per metric
 * with the previous model's bar beside the new one's, each labelled with its value, and the change in
 * green when it is better and red when it is worse. Without earlier numbers it shows the new model alone.
 */
export async function renderBenchmarkChart(
  current: BenchPair,
  previous: PreviousBench | undefined,
  about: { model: string; host: string; swapId: string },
): Promise<BenchmarkChart> {
  const likeModel = previous !== undefined && sameModel(previous.model, about.model);
  const settings = [
    { label: "1 stream", now: current.single, before: previous?.single },
    {
      label: `loaded (${streams(current.loaded.maxConcurrency, "concurrency not reported")})`,
      now: current.loaded,
      // another concurrency is another test: the new bar alone
      before:
        previous?.loaded?.maxConcurrency === current.loaded.maxConcurrency ? previous?.loaded : undefined,
    },
  ];
  const rows = settings.map((s) => ({
    label: s.label,
    panels: METRICS.map((m): BarPanel => panel(m, s.now, s.before, likeModel)),
  }));
  const legend = [
    ...(previous === undefined ? [] : [{ label: `before: ${previous.model}`, color: COLOR.before }]),
    { label: `now: ${about.model}`, color: COLOR.now },
  ];
  const chart = barChartSvg({
    title: `Benchmark on ${about.host}`,
    legend,
    rows,
    footer:
      previous === undefined
        ? "No earlier numbers on this host to compare with."
        : likeModel
          ? "Green: better (more tok/s, fewer ms). Red: worse."
          : "Two different models: the change is shown, neither better nor worse is said.",
  });
  return {
    png: await svgToPng(chart.svg, FONT_FAMILY),
    width: chart.width,
    height: chart.height,
    filename: `benchmark-${about.swapId.replace(/[^A-Za-z0-9._-]/g, "_")}.png`,
    title: truncate(`Benchmark on ${about.host}: ${about.model}`, 250),
    altText: truncate(renderBenchmarkComparison(current, previous, { model: about.model }).text, 1000),
  };
}

function panel(metric: Metric, now: BenchResult, before: BenchResult | undefined, judge: boolean): BarPanel {
  const value = metric.pick(now);
  const bars = [
    ...(before === undefined ? [] : [{ label: "before", value: metric.pick(before), color: COLOR.before }]),
    { label: "now", value, color: COLOR.now },
  ];
  const result: BarPanel = { title: metric.title, bars, format: formatNumber };
  if (before === undefined) return result;
  const was = metric.pick(before);
  const change = changeText(value, was);
  if (change === "" || value === undefined || was === undefined) return result;
  if (change === "±0.0%") return { ...result, note: { text: "±0.0% same", color: COLOR.muted } };
  if (!judge) return { ...result, note: { text: change, color: COLOR.muted } };
  const better = metric.higherIsBetter ? value > was : value < was;
  return {
    ...result,
    note: { text: `${change} ${better ? "better" : "worse"}`, color: better ? COLOR.better : COLOR.worse },
  };
}
