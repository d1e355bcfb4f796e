import type { KnownBlock } from "@slack/types";
import { engineFor } from "../engine/engines.ts";
import { escapeMrkdwn } from "../escape-mrkdwn.ts";
import { person } from "../grammar/person.ts";
import type { FlagChoice, SwapPlan } from "../plan/types.ts";
import { LIMITS, section, truncate } from "../slack/blocks.ts";
import { fitSentences } from "./sentences.ts";

/*
 * The pieces a plan's two messages (the decision and its details) are written with: untrusted text made
 * safe for mrkdwn, the engine's command, code blocks and sections that fit Slack's limits.
 */

/** Untrusted names are cut before escaping, so an escape entity is never cut in half. */
const NAME_MAX = 200;

/** Untrusted text in mrkdwn: escaped, and without backticks, which could open a code span or block. */
export const clean = (text: string, max = NAME_MAX): string =>
  escapeMrkdwn(truncate(text, max)).replaceAll("`", "ˋ");

/** A reason or an explanation in mrkdwn: whole sentences that fit `max`, escaped. */
export const prose = (text: string, max: number): string =>
  escapeMrkdwn(fitSentences(text, max)).replaceAll("`", "ˋ");

export const code = (text: string, max = NAME_MAX): string => `\`${clean(text, max)}\``;

export const mention = (id: string): string => person(id) ?? clean(id, 80);

/** Where a flag came from (a recipe, the host, a profile, the swap) and its source, when it has them. */
export function origin(f: { from?: string | undefined; source?: string | undefined }): string {
  const parts = [f.from, f.source === undefined ? undefined : `source: ${f.source}`].filter(
    (p): p is string => p !== undefined,
  );
  return parts.length === 0 ? "" : ` _(${clean(parts.join("; "), 300)})_`;
}

export function checkLine(check: SwapPlan["checks"][number]): string {
  const head = `${check.ok ? "✓" : "✗"} *${clean(check.id, 40)}*: ${prose(check.detail, 600)}`;
  return check.ok || check.fix === undefined ? head : `${head}\n      _Fix:_ ${prose(check.fix, 600)}`;
}

export function flagText(flag: FlagChoice): string {
  if (flag.positional === true) return flag.value ?? "";
  const name = flag.flag ?? `(no flag for ${flag.setting})`;
  return flag.value === undefined ? name : `${name} ${flag.value}`;
}

/** Shell-like quoting for reading only (the unit has systemd's own). */
function shown(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** The engine's command line as the unit will run it, one flag a line; flags the build lacks marked. */
export function commandBlock(plan: SwapPlan): string {
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
export function headCodeBlock(lines: readonly string[], max: number = LIMITS.sectionText): string {
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
export function sections(lines: readonly string[], maxSections: number): KnownBlock[] {
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

/** How many lines a unified diff adds and removes (its headers not counted). */
export function diffSize(diff: string): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const line of diff.split("\n")) {
    if (line.startsWith("+++") || line.startsWith("---")) continue;
    if (line.startsWith("+")) added++;
    else if (line.startsWith("-")) removed++;
  }
  return { added, removed };
}
