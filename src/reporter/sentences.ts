import { truncate } from "../slack/blocks.ts";

/** A sentence or clause ends here: ". ", "; ", "! " or "? " (a decimal point has no space after it). */
const BOUNDARY = /[.;!?](?=\s)/g;

/**
 * Text shortened to at most `max` characters without cutting a sentence: the whole sentences that fit,
 * then " …" to say more was said. Only a first sentence longer than `max` (untrusted text, a name the
 * size of a page) is cut, at a word where there is one.
 */
export function fitSentences(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = -1;
  for (const match of text.matchAll(BOUNDARY)) {
    if (match.index + 1 + 2 > max) break;
    end = match.index + 1;
  }
  if (end > 0) return `${text.slice(0, end).replace(/;$/, ".")} …`;
  const word = text.lastIndexOf(" ", max - 1);
  return word > max / 2 ? `${text.slice(0, word)}…` : truncate(text, max);
}

/** The first sentence of a text (up to its full stop), or the whole when it has one sentence. */
export function firstSentence(text: string): string {
  const match = /[.!?](?=\s)/.exec(text);
  return match === null ? text.replace(/\.$/, "") : text.slice(0, match.index);
}
