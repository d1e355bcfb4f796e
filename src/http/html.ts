/**
 * HTML made safe by construction: the `html` template escapes every value put into it, so a model name
 * `<script>…` from the Hub, a host name or an audit detail reaches the page as text. Only an `Html`
 * (made by `html` itself) goes in as it is.
 */
export class Html {
  constructor(readonly text: string) {}

  toString(): string {
    return this.text;
  }
}

/** What `html` takes: text (escaped), numbers, markup made by `html`, lists of it; nothing for absent ones. */
type Part = string | number | Html | readonly Html[] | undefined | null | false;

const ENTITIES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Text as HTML text or an attribute value (quoted either way). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

function part(value: Part): string {
  if (value === undefined || value === null || value === false) return "";
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map((v: Html) => v.text).join("");
  return escapeHtml(String(value));
}

/** A piece of HTML whose every interpolated value is escaped (but for `Html` pieces). */
export function html(strings: TemplateStringsArray, ...values: readonly Part[]): Html {
  let out = strings[0] ?? "";
  values.forEach((value, i) => {
    out += part(value) + (strings[i + 1] ?? "");
  });
  return new Html(out);
}
