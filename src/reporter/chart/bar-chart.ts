import { fitText, xmlText } from "./svg-text.ts";

/** The chart palette (Slack's own colours), by name; values index PALETTE. */
export const PALETTE: readonly (readonly [number, number, number])[] = [
  [255, 255, 255], // background
  [29, 28, 29], // text
  [97, 96, 97], // muted text
  [221, 221, 221], // axis and rules
  [18, 100, 163], // the new model's bars (Slack blue)
  [176, 183, 191], // the previous model's bars
  [0, 122, 90], // better (Slack green)
  [224, 30, 90], // worse (Slack red)
  [246, 246, 246], // panel background
];

export const COLOR = {
  background: 0,
  text: 1,
  muted: 2,
  rule: 3,
  now: 4,
  before: 5,
  better: 6,
  worse: 7,
  panel: 8,
} as const;

export interface Bar {
  /** Under the bar ("before", "now"). */
  label: string;
  /** undefined or not finite: drawn as "n/a". */
  value: number | undefined;
  color: number;
}

export interface BarPanel {
  /** Above the bars ("Output tok/s"). */
  title: string;
  bars: readonly Bar[];
  /** How a value is written above its bar. */
  format: (value: number) => string;
  /** Under the bars, e.g. the change ("▲8.7% better") in the colour that says better or worse. */
  note?: { text: string; color: number };
}

export interface BarChartSpec {
  title: string;
  legend: readonly { label: string; color: number }[];
  /** Rows of panels (e.g. one row per load setting), each with its label. */
  rows: readonly { label: string; panels: readonly BarPanel[] }[];
  footer?: string;
}

/** The font the chart names; svgToPng loads it from the package that ships it. */
export const FONT_FAMILY = "DejaVu Sans";

/** Sizes in pixels: 16 px text and a 22 px title stay legible when Slack shrinks the preview. */
const W = 720;
const MARGIN = 20;
const GAP = 16;
const TEXT = 16;
const TITLE = 22;
const LINE = TEXT + 6;
const PLOT = 112;
const BAR_MAX = 72;

const fill = (color: number): string => {
  const [r, g, b] = PALETTE[color] ?? PALETTE[COLOR.text]!;
  return `#${[r, g, b].map((c) => c.toString(16).padStart(2, "0")).join("")}`;
};

/** A rectangle on whole pixels, so its colour is exact inside (crispEdges). */
const rect = (x: number, y: number, w: number, h: number, color: number): string =>
  `<rect x="${Math.round(x)}" y="${Math.round(y)}" width="${Math.max(0, Math.round(x + w) - Math.round(x))}" height="${Math.max(0, Math.round(y + h) - Math.round(y))}" fill="${fill(color)}"/>`;

/** Text whose top is at y (SVG places the baseline: DejaVu Sans's ascent is about 0.76 em). */
function text(
  x: number,
  y: number,
  content: string,
  color: number,
  options: { size?: number; bold?: boolean; anchor?: "start" | "middle" } = {},
): string {
  const size = options.size ?? TEXT;
  const weight = options.bold ? ` font-weight="bold"` : "";
  const anchor = options.anchor === "middle" ? ` text-anchor="middle"` : "";
  const baseline = Math.round(y + size * 0.8);
  return `<text x="${Math.round(x)}" y="${baseline}" font-size="${size}"${weight}${anchor} fill="${fill(color)}">${xmlText(content)}</text>`;
}

/**
 * Small multiples of bar groups as an SVG document: one panel per metric, each with its own scale
 * starting at zero (tok/s and milliseconds never share an axis), every bar labelled with its value,
 * the change under the bars in the colour that says better or worse.
 */
export function barChartSvg(spec: BarChartSpec): { svg: string; width: number; height: number } {
  const titleH = TITLE + 12;
  const legendH = spec.legend.length * LINE + 8;
  const panelH = LINE + PLOT + LINE + (spec.rows.some((r) => r.panels.some((p) => p.note)) ? LINE : 0) + 8;
  const rowH = LINE + 6 + panelH + 10;
  const footerH = spec.footer === undefined ? 0 : LINE;
  const height = MARGIN + titleH + legendH + spec.rows.length * rowH + footerH + MARGIN;
  const inner = W - 2 * MARGIN;
  const parts: string[] = [rect(0, 0, W, height, COLOR.background)];

  let y = MARGIN;
  parts.push(
    text(MARGIN, y, fitText(spec.title, inner, TITLE, true), COLOR.text, { size: TITLE, bold: true }),
  );
  y += titleH;
  for (const entry of spec.legend) {
    const box = TEXT;
    parts.push(rect(MARGIN, y + 1, box, box, entry.color));
    parts.push(text(MARGIN + box + 8, y, fitText(entry.label, inner - box - 8, TEXT), COLOR.text));
    y += LINE;
  }
  y += 8;

  let clip = 0;
  for (const row of spec.rows) {
    parts.push(text(MARGIN, y, fitText(row.label, inner, TEXT, true), COLOR.text, { bold: true }));
    parts.push(rect(MARGIN, y + LINE, inner, 1, COLOR.rule));
    y += LINE + 6;
    const count = Math.max(1, row.panels.length);
    const panelW = (inner - (count - 1) * GAP) / count;
    row.panels.forEach((panel, i) => {
      parts.push(barPanel(panel, MARGIN + i * (panelW + GAP), y, panelW, panelH, `panel-${clip++}`));
    });
    y += panelH + 10;
  }
  if (spec.footer !== undefined) parts.push(text(MARGIN, y, fitText(spec.footer, inner, TEXT), COLOR.muted));

  const svg = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${height}" viewBox="0 0 ${W} ${height}" font-family="${FONT_FAMILY}" shape-rendering="crispEdges">`,
    ...parts,
    "</svg>",
  ].join("\n");
  return { svg, width: W, height };
}

function barPanel(panel: BarPanel, x: number, y: number, w: number, h: number, id: string): string {
  const pad = 8;
  const parts = [
    `<clipPath id="${id}">${rect(x, y, w, h, COLOR.panel)}</clipPath>`,
    `<g clip-path="url(#${id})">`,
    rect(x, y, w, h, COLOR.panel),
    text(x + pad, y + pad, fitText(panel.title, w - 2 * pad, TEXT), COLOR.text),
  ];
  const baseline = y + pad + LINE + PLOT;
  const values = panel.bars.map((b) =>
    b.value !== undefined && Number.isFinite(b.value) ? Math.max(0, b.value) : undefined,
  );
  const max = Math.max(0, ...values.map((v) => v ?? 0));
  const n = Math.max(1, panel.bars.length);
  const slot = (w - 2 * pad) / n;
  const barW = Math.min(BAR_MAX, slot - 16);
  // room above the tallest bar for its value
  const scale = max > 0 ? (PLOT - LINE - 4) / max : 0;

  panel.bars.forEach((bar, i) => {
    const centre = x + pad + slot * i + slot / 2;
    const value = values[i];
    if (value === undefined) {
      parts.push(text(centre, baseline - LINE, "n/a", COLOR.muted, { anchor: "middle" }));
    } else {
      const barH = Math.max(1, Math.round(value * scale));
      parts.push(rect(centre - barW / 2, baseline - barH, barW, barH, bar.color));
      const label = fitText(panel.format(value), slot - 2, TEXT);
      parts.push(text(centre, baseline - barH - LINE + 2, label, COLOR.text, { anchor: "middle" }));
    }
    parts.push(
      text(centre, baseline + 6, fitText(bar.label, slot - 2, TEXT), COLOR.muted, { anchor: "middle" }),
    );
  });
  parts.push(rect(x + pad, baseline, w - 2 * pad, 1, COLOR.muted));

  if (panel.note !== undefined) {
    const note = fitText(panel.note.text, w - 2 * pad, TEXT, true);
    parts.push(
      text(x + w / 2, baseline + 6 + LINE, note, panel.note.color, { anchor: "middle", bold: true }),
    );
  }
  parts.push("</g>");
  return parts.join("\n");
}
