import { escapeMrkdwn } from "../escape-mrkdwn.ts";
import { duration, utcTime } from "../format-duration.ts";
import { by } from "../grammar/person.ts";
import { clientImpact } from "../swap/client-impact.ts";
import type { SwapRecord } from "../swap/swap-record.ts";

/**
 * The one line the thread (and, but for a dry run, the channel) gets at the end. The reason quotes
 * errors and journal lines, so it is escaped (a `<!channel>` or ``` in a log line stays text); people are
 * named from the record's ids.
 */
export function finalLine(record: SwapRecord): string {
  const check = record.finalCheck;
  // what the host was seen to serve comes before what to try, which is said last
  return outcomeLine(record, check === undefined ? "" : ` ${checkedLine(check)}`);
}

/** What the last check before the end saw, as it saw it (jobs/swap/stages/final-check.ts). */
function checkedLine(check: NonNullable<SwapRecord["finalCheck"]>): string {
  // the detail quotes unit names in backticks itself (mentions and links stay text: escaped)
  return `${check.ok ? "🔎" : "⚠️"} Checked at ${utcTime(check.at).slice(11)}: ${escapeMrkdwn(check.detail)}.`;
}

function outcomeLine(record: SwapRecord, checked: string): string {
  const model = `${escapeMrkdwn(record.request.model.repo)}${record.plan ? `@${record.plan.model.sha.slice(0, 7)}` : ""}`;
  const reason =
    record.reason === undefined
      ? ""
      : `${escapeMrkdwn(record.reason)}${record.failure === undefined ? "" : ` (${escapeMrkdwn(record.failure.code)})`}`;
  // what was seen, then what to try, last: said once, here
  const fix = `${checked}${record.failure === undefined ? "" : ` *Fix:* ${escapeMrkdwn(record.failure.fix)}`}`;
  const host = record.host;
  switch (record.outcome ?? "failed") {
    case "succeeded": {
      const refused =
        record.cancel?.refused === undefined
          ? ""
          : ` The cancel${by(record.cancel.by)} was not carried out: \`${escapeMrkdwn(record.previous?.unit ?? "the old unit")}\` no longer served.`;
      return `✅ *${host} now serves ${model}* (\`${record.plan?.unitName}\`). ${clientsSentence(record)}; sanity: ${escapeMrkdwn(record.sanity?.summary ?? "n/a")}.${record.stages.benchmark.state === "failed" ? " ⚠️ The benchmark did not run (see above)." : ""}${refused}${checked}`;
    }
    case "rolled_back":
      return `↩️ *Swap to ${model} on ${host} rolled back*: ${reason}. ${escapeMrkdwn((record.rollback?.detail ?? "").replace(/\.$/, ""))}.${fix}`;
    case "failed": {
      const undoFailed = record.rollback !== undefined && !record.rollback.ok;
      // what serves is what the last check saw: nothing, or a unit the rollback could not replace
      if (undoFailed && record.finalCheck?.ok !== true)
        return `<!channel> 🚨 *${host} serves nothing*: the swap to ${model} failed (${reason}) and the rollback failed too: ${escapeMrkdwn(record.rollback!.detail)}. Act now: \`/llm status ${host}\`, then restart \`${record.previous?.unit}\` by hand.${checked}`;
      if (undoFailed)
        return `❌ *Swap to ${model} on ${host} failed*: ${reason}. It could not be undone (${escapeMrkdwn(record.rollback!.detail)}); \`${escapeMrkdwn(record.finalCheck!.unit)}\` serves.${fix}`;
      // touched and not rolled back (a restart at full memory that failed): the check below says what is
      const told =
        record.switch === undefined
          ? " Nothing on the host was changed."
          : record.rollback?.ok === true
            ? ` ${escapeMrkdwn(record.rollback.detail)}.`
            : "";
      return `❌ *Swap to ${model} on ${host} failed*: ${reason}.${told}${fix}`;
    }
    case "rejected":
      return `🚫 Swap to ${model} on ${host} rejected${by(record.decision?.by)}${reason === "" ? "" : `: ${reason}`}.`;
    case "expired":
      return `⌛ Swap to ${model} on ${host} expired: ${reason}.`;
    case "cancelled":
      return `✋ Swap to ${model} on ${host} cancelled${by(record.cancel?.by)}${reason === "" ? "" : `: ${reason}`}.${checked}`;
    case "planned":
      return `📝 Dry run: the plan for ${model} on ${host} is above. Nothing was downloaded or changed.`;
  }
}

/** Downtime, or behind a front door how long new requests were held (none refused). */
function clientsSentence(record: SwapRecord): string {
  const impact = clientImpact(record);
  const cutAtFlip = impact?.cut
    ? ` (${impact.cut} request${impact.cut === 1 ? "" : "s"} on the old one cut at the drain's bound)`
    : "";
  if (impact?.mode === "flipped" && impact.restartHeldSeconds !== undefined)
    return `No request refused: blue/green, the front door flipped to the new unit${cutAtFlip}; new requests were then held at most ${duration(impact.restartHeldSeconds)} while it restarted at full memory`;
  if (impact?.mode === "flipped")
    return impact.back === true
      ? "No request refused: the front door flipped back to the old unit, which never stopped"
      : `No request refused or held: blue/green, the front door flipped to the new unit${cutAtFlip}`;
  if (impact?.mode === "unseen")
    return "Production never saw the new model: it kept serving the old one throughout";
  if (impact?.mode === "held")
    return `No request refused: new ones were held at most ${duration(impact.gapSeconds)} by the front door${impact.cut ? `, ${impact.cut} cut at the drain's bound` : ""}`;
  return `Downtime ${duration(record.downtimeSeconds ?? 0)}`;
}
