import type { SlackMessage } from "../../testbench/slack/index.ts";

/** A message as a person reads it: header, sections, fields and context lines, in order. */
export function shown(message: Pick<SlackMessage, "blocks">): string {
  type Text = { text?: string };
  const blocks = (message.blocks ?? []) as { text?: Text; fields?: Text[]; elements?: Text[] }[];
  return blocks
    .flatMap((b) => [
      b.text?.text,
      ...(b.fields ?? []).map((f) => f.text),
      ...(b.elements ?? []).map((e) => e.text),
    ])
    .filter((t): t is string => typeof t === "string")
    .join("\n");
}
