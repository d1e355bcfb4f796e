import { fitText, GLYPH_HEIGHT, textWidth } from "./bitmap-font.ts";
import { Canvas } from "./canvas.ts";

/** The chart palette (Slack's own colours), by name; values are palette indices. */
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
  /** Under the bars, e.g. the change ("▲8.7%") in the colour that says better or worse. */
  note?: { text: string; color: number };
}

export interface BarChartSpec {
  title: string;
  legend: readonly { label: string; color: number }[];
  /** Rows of panels (e.g. one row per load setting), each with its label. */
  rows: readonly { label: string; panels: readonly BarPanel[] }[];
  footer?: string;
}

/** Sizes in pixels. Text is drawn at scale 2 (10×16 px glyphs), the title at 3, to stay legible when Slack shrinks the preview. */
const W = 720;
const MARGIN = 20;
const GAP = 16;
const TEXT = 2;
const TITLE = 3;
const LINE = GLYPH_HEIGHT * TEXT + 6;
const PLOT = 112;
const BAR_MAX = 72;

/**
 * Small multiples of bar groups: one panel per metric, each with its own scale starting at zero (tok/s
 * and milliseconds never share an axis), every bar labelled with its value. Returns the PNG bytes.
 */
export function renderBarChart(spec: BarChartSpec): { png: Buffer; width: number; height: number } {
  const titleH = GLYPH_HEIGHT * TITLE + 10;
  const legendH = spec.legend.length * LINE + 8;
  const panelH = LINE + PLOT + LINE + (spec.rows.some((r) => r.panels.some((p) => p.note)) ? LINE : 0) + 8;
  const rowH = LINE + 6 + panelH + 10;
  const footerH = spec.footer === undefined ? 0 : LINE;
  const height = MARGIN + titleH + legendH + spec.rows.length * rowH + footerH + MARGIN;
  const canvas = new Canvas(W, height, PALETTE, COLOR.background);
  const inner = W - 2 * MARGIN;

  let y = MARGIN;
  canvas.text(MARGIN, y, fitText(spec.title, inner, TITLE), COLOR.text, TITLE);
  y += titleH;
  for (const entry of spec.legend) {
    const box = GLYPH_HEIGHT * TEXT - 4;
    canvas.fillRect(MARGIN, y + 1, box, box, entry.color);
    canvas.text(MARGIN + box + 8, y, fitText(entry.label, inner - box - 8, TEXT), COLOR.text, TEXT);
    y += LINE;
  }
  y += 8;

  for (const row of spec.rows) {
    canvas.text(MARGIN, y, fitText(row.label, inner, TEXT), COLOR.text, TEXT);
    canvas.hline(MARGIN, y + LINE, inner, COLOR.rule);
    y += LINE + 6;
    const count = Math.max(1, row.panels.length);
    const panelW = (inner - (count - 1) * GAP) / count;
    row.panels.forEach((panel, i) => {
      drawPanel(canvas, panel, MARGIN + i * (panelW + GAP), y, panelW, panelH);
    });
    y += panelH + 10;
  }
  if (spec.footer !== undefined) canvas.text(MARGIN, y, fitText(spec.footer, inner, TEXT), COLOR.muted, TEXT);
  return { png: canvas.toPng(), width: W, height };
}

function drawPanel(canvas: Canvas, panel: BarPanel, x: number, y: number, w: number, h: number): void {
  canvas.fillRect(x, y, w, h, COLOR.panel);
  const pad = 8;
  canvas.text(x + pad, y + pad, fitText(panel.title, w - 2 * pad, TEXT), COLOR.text, TEXT);

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
      canvas.textCentered(centre, baseline - LINE, "n/a", COLOR.muted, TEXT);
    } else {
      const barH = Math.max(1, Math.round(value * scale));
      canvas.fillRect(centre - barW / 2, baseline - barH, barW, barH, bar.color);
      const label = fitText(panel.format(value), slot - 2, TEXT);
      canvas.textCentered(centre, baseline - barH - LINE + 2, label, COLOR.text, TEXT);
    }
    const name = fitText(bar.label, slot - 2, TEXT);
    canvas.textCentered(centre, baseline + 6, name, COLOR.muted, TEXT);
  });
  canvas.hline(x + pad, baseline, w - 2 * pad, COLOR.muted);

  if (panel.note !== undefined) {
    const note = fitText(panel.note.text, w - 2 * pad, TEXT);
    canvas.text(x + (w - textWidth(note, TEXT)) / 2, baseline + 6 + LINE, note, panel.note.color, TEXT);
  }
}
