import type { KnownBlock } from "@slack/types";
import type { SlackMessage } from "../slack/blocks.ts";

/**
 * A message as a terminal shows it: the blocks' text in order (headers, sections and their fields,
 * context lines), with Slack's markup turned into words: `<@U1>` → `@U1`, `<#C1>` → `#C1`, a link
 * `<url|label>` → `label (url)`, a date → its fallback, `*bold*` → `bold`, and the escapes undone.
 * For the CLI, which prints what Slack would have shown.
 */
export function plainText(message: SlackMessage): string {
  const parts = message.blocks.flatMap(blockText);
  return (parts.length === 0 ? [plainMrkdwn(message.text)] : parts).join("\n");
}

function blockText(block: KnownBlock): string[] {
  switch (block.type) {
    case "header":
      return [plainMrkdwn(block.text.text)];
    case "section": {
      const out = block.text === undefined ? [] : [plainMrkdwn(block.text.text)];
      for (const field of block.fields ?? []) out.push(plainMrkdwn(field.text));
      return out;
    }
    case "context":
      return [
        block.elements
          .map((e) => ("text" in e && typeof e.text === "string" ? plainMrkdwn(e.text) : ""))
          .filter((t) => t !== "")
          .join("  "),
      ];
    case "divider":
      return ["—"];
    default:
      return [];
  }
}

/** One piece of mrkdwn as plain text. */
export function plainMrkdwn(text: string): string {
  return text
    .replace(/<!date\^[^|>]*\|([^>]*)>/g, "$1")
    .replace(/<!subteam\^([A-Z0-9]+)(?:\|([^>]*))?>/g, (_m, id: string, label?: string) => label ?? `@${id}`)
    .replace(/<([@#])([A-Z0-9]+)(?:\|[^>]*)?>/g, "$1$2")
    .replace(/<(https?:[^|>]+)\|([^>]+)>/g, "$2 ($1)")
    .replace(/<(https?:[^>]+)>/g, "$1")
    .replace(/(^|[\s(])\*([^*\n]+)\*(?=$|[\s).,:;!?])/g, "$1$2")
    .replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">")
    .replaceAll("&amp;", "&");
}
