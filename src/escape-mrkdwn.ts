/**
 * Escapes the three characters Slack's mrkdwn treats as control characters, and breaks up triple
 * backticks, which would open a code block that swallows the rest of the message.
 */
export function escapeMrkdwn(text: string): string {
  return text
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll("```", "ˋˋˋ");
}
