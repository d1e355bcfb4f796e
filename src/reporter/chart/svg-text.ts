/**
 * Text for an SVG document: escaped for XML, with the characters XML cannot hold replaced, and cut to an
 * estimated width. The estimate is DejaVu Sans's (the font the chart ships): a little wide for most
 * text, so a cut is rarely needed and what is cut ends in "…"; the chart clips each panel as well.
 */

/** `&`, `<`, `>` and quotes, escaped; C0 controls (but tab and newline), U+FFFE/U+FFFF and lone surrogates become U+FFFD. */
export function xmlText(text: string): string {
  let out = "";
  for (const char of text) {
    const code = char.codePointAt(0)!;
    const invalid =
      (code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d) ||
      code === 0xfffe ||
      code === 0xffff ||
      (code >= 0xd800 && code <= 0xdfff);
    if (invalid) out += "\uFFFD";
    else if (char === "&") out += "&amp;";
    else if (char === "<") out += "&lt;";
    else if (char === ">") out += "&gt;";
    else if (char === '"') out += "&quot;";
    else if (char === "'") out += "&#39;";
    else out += char;
  }
  return out;
}

/** Advance of a character in DejaVu Sans, in em, rounded up by class. */
function advance(char: string): number {
  if (" .,:;'|!ijlItf()[]".includes(char)) return 0.4;
  if ("mwMW@%—".includes(char)) return 1.0;
  if (/[A-Z0-9]/.test(char)) return 0.72;
  if (/[a-z]/.test(char)) return 0.63;
  return 0.85; // symbols and anything else
}

/** The estimated width of the text at a font size, in pixels (bold is about 10% wider). */
export function textWidth(text: string, size: number, bold = false): number {
  let em = 0;
  for (const char of text) em += advance(char);
  return em * size * (bold ? 1.1 : 1);
}

/** The text, or as much of it as fits in `width` followed by "…". */
export function fitText(text: string, width: number, size: number, bold = false): string {
  if (textWidth(text, size, bold) <= width) return text;
  const chars = [...text];
  while (chars.length > 0 && textWidth(`${chars.join("")}…`, size, bold) > width) chars.pop();
  return `${chars.join("")}…`;
}
