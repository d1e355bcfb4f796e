import { escapeMrkdwn } from "../escape-mrkdwn.ts";
import { formatGB } from "../plan/byte-units.ts";
import { freedBytes, type GcReport } from "../retention/collect-garbage.ts";
import type { Verdict } from "../retention/retention-plan.ts";
import { context, header, message, type SlackMessage, section, truncate } from "../slack/blocks.ts";

/** Up to this many paths a list names; the rest are counted. */
const LISTED = 20;

const KIND = { model: "model", build: "engine build", cache: "compile cache", unit: "unit file" } as const;

function row(v: Verdict, done?: string): string {
  return `• \`${escapeMrkdwn(v.item.path)}\` (${KIND[v.item.kind]}, ${formatGB(v.item.bytes)}) — ${escapeMrkdwn(done ?? v.why)}`;
}

function list(rows: readonly string[]): string {
  const shown = rows.slice(0, LISTED);
  const more = rows.length > LISTED ? `\n… and ${rows.length - LISTED} more` : "";
  return truncate(`${shown.join("\n")}${more}`, 2900);
}

/**
 * `/llm gc`'s answer: in a dry run, each path that would go (size, why) and what it would free; else
 * what was deleted and what df says it freed; then what is kept and why.
 */
export function renderGcReport(report: GcReport): SlackMessage {
  const { plan } = report;
  const blocks = [
    header(`${report.dryRun ? "🧹 Disk retention (dry run)" : "🧹 Disk retention"}: ${report.host}`),
  ];
  let summary: string;
  if (report.dryRun) {
    summary =
      plan.remove.length === 0
        ? `Nothing would go on ${report.host}: everything is kept (${formatGB(report.freeBefore)} free).`
        : `Would delete ${plan.remove.length} ${plan.remove.length === 1 ? "entry" : "entries"} and free about ${formatGB(plan.reclaimableBytes)} (${formatGB(report.freeBefore)} free now). Nothing was changed; \`/llm gc ${report.host}\` deletes them.`;
    if (plan.remove.length > 0) blocks.push(section(`*Would go*\n${list(plan.remove.map((v) => row(v)))}`));
  } else {
    const outcome = new Map(report.outcomes.map((o) => [o.path, o]));
    const deleted = plan.remove.filter((v) => outcome.get(v.item.path)?.result === "deleted");
    const keptAfterAll = plan.remove.filter((v) => outcome.get(v.item.path)?.result === "kept");
    summary =
      plan.remove.length === 0
        ? `Nothing to delete on ${report.host}: everything is kept (${formatGB(report.freeBefore)} free).`
        : `Deleted ${deleted.length} of ${plan.remove.length} on ${report.host}: freed ${formatGB(freedBytes(report))} as df measures it (${formatGB(report.freeBefore)} free before, ${formatGB(report.freeAfter ?? report.freeBefore)} after).`;
    if (deleted.length > 0) blocks.push(section(`*Deleted*\n${list(deleted.map((v) => row(v)))}`));
    if (keptAfterAll.length > 0)
      blocks.push(
        section(
          `*Not deleted after all* (the host had changed)\n${list(keptAfterAll.map((v) => row(v, outcome.get(v.item.path)?.why ?? "kept")))}`,
        ),
      );
  }
  blocks.splice(1, 0, section(summary));
  if (plan.keep.length > 0) blocks.push(section(`*Kept*\n${list(plan.keep.map((v) => row(v)))}`));
  blocks.push(
    context(
      "Kept always: what serves, unit files modelswap did not write, the last `retention.keep` units that served (what a rollback goes back to), whatever a kept unit file names, `retention.pinned`, and downloads newer than the newest unit file.",
    ),
  );
  return message(summary, blocks);
}
