import type { KnownBlock } from "@slack/types";

/** A Slack message: Block Kit for people, `text` as the fallback for notifications and screen readers. */
export interface SlackMessage {
  text: string;
  blocks: KnownBlock[];
}

/** Slack's limits (https://api.slack.com/reference/block-kit/blocks). */
export const LIMITS = {
  blocks: 50,
  sectionText: 3000,
  headerText: 150,
  fieldText: 2000,
  fields: 10,
  contextElements: 10,
  fallbackText: 4000,
} as const;

/** Cuts text to max characters, marking the cut. */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = Math.max(0, max - 1);
  // never cut between the two halves of an emoji (a lone surrogate is not valid text)
  if (end > 0 && /[\uD800-\uDBFF]/.test(text.charAt(end - 1))) end -= 1;
  return `${text.slice(0, end)}…`;
}

/**
 * Keeps the last lines of a log that fit a code block in one section (each line cut to 300 characters),
 * and says how many earlier lines were left out.
 */
export function codeBlock(lines: readonly string[], max = LIMITS.sectionText): string {
  const fence = "```";
  // room for the fences, their newlines and the "… N earlier lines" mark
  const budget = max - fence.length * 2 - 2 - 40;
  const kept: string[] = [];
  let size = 0;
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = truncate(lines[i] ?? "", 300).replaceAll("```", "ˋˋˋ");
    if (size + line.length + 1 > budget) break;
    kept.unshift(line);
    size += line.length + 1;
  }
  const left = lines.length - kept.length;
  if (left > 0) kept.unshift(`… ${left} earlier ${left === 1 ? "line" : "lines"}`);
  return `${fence}\n${kept.join("\n")}\n${fence}`;
}

/** Rows of cells as lines of aligned columns (two spaces between them, no trailing spaces), for code blocks. */
export function alignColumns(rows: readonly (readonly string[])[]): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    for (const [i, cell] of row.entries()) widths[i] = Math.max(widths[i] ?? 0, cell.length);
  }
  return rows.map((row) =>
    row
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join("  ")
      .trimEnd(),
  );
}

export function section(text: string): KnownBlock {
  return { type: "section", text: { type: "mrkdwn", text: truncate(text, LIMITS.sectionText) } };
}

export function header(text: string): KnownBlock {
  return {
    type: "header",
    text: { type: "plain_text", text: truncate(text, LIMITS.headerText), emoji: true },
  };
}

export function context(...texts: string[]): KnownBlock {
  return {
    type: "context",
    elements: texts
      .slice(0, LIMITS.contextElements)
      .map((text) => ({ type: "mrkdwn" as const, text: truncate(text, LIMITS.sectionText) })),
  };
}

export function fields(pairs: readonly [string, string][]): KnownBlock {
  return {
    type: "section",
    fields: pairs.slice(0, LIMITS.fields).map(([label, value]) => ({
      type: "mrkdwn" as const,
      text: truncate(`*${label}*\n${value}`, LIMITS.fieldText),
    })),
  };
}

export function message(text: string, blocks: KnownBlock[]): SlackMessage {
  return { text: truncate(text, LIMITS.fallbackText), blocks: blocks.slice(0, LIMITS.blocks) };
}
