import type { HostStatus } from "../status/probe-host.ts";
import { context, header, LIMITS, message, type SlackMessage, section, truncate } from "./message.ts";
import { servedModel } from "./status-message.ts";

export interface FleetRow {
  status: HostStatus;
  /** The swap running on the host now, if any. */
  active?: { id: string; step: string; repo: string };
  /** The host's last finished swap. */
  last?: { outcome: string; repo: string };
}

const STATE: Record<HostStatus["verdict"], string> = {
  healthy: "🟢 healthy",
  starting: "🟡 starting",
  "not-serving": "🔴 down",
  failed: "🔴 failed",
  unreachable: "⚫ unreachable",
};

/**
 * `/llm status` without a host: one compact table of every host — state, model, unit, GPUs, the swap
 * running there and the last swap's outcome. Rows are split over several code blocks when a fleet is too
 * big for one section.
 */
export function renderFleet(rows: readonly FleetRow[], now = new Date()): SlackMessage {
  const healthy = rows.filter((r) => r.status.verdict === "healthy").length;
  const title = `Fleet: ${rows.length} host${rows.length === 1 ? "" : "s"}, ${healthy} healthy`;
  const lines = rows.map((row) => {
    const s = row.status;
    const model = s.connection !== undefined ? "—" : truncate(servedModel(s) ?? "none", 40);
    const gpus =
      s.gpus.length === 0
        ? "—"
        : `${s.gpus.filter((g) => (g.utilizationPct ?? 0) > 5).length}/${s.gpus.length} busy ${Math.round(
            (100 * s.gpus.reduce((n, g) => n + g.memoryUsedMiB, 0)) /
              Math.max(
                1,
                s.gpus.reduce((n, g) => n + g.memoryTotalMiB, 0),
              ),
          )}% mem`;
    const swap = row.active
      ? `swapping to ${truncate(row.active.repo, 30)} (${row.active.step})`
      : row.last
        ? `last: ${row.last.outcome.replace("_", " ")}`
        : "";
    return [truncate(s.host, 20), STATE[s.verdict], model, truncate(s.unitName, 36), gpus, swap];
  });
  const head = ["HOST", "STATE", "MODEL", "UNIT", "GPUS", "SWAP"];
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const format = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join("  ")
      .trimEnd();
  const blocks = [header(title)];
  let chunk: string[] = [format(head)];
  const flush = () => {
    blocks.push(section(`\`\`\`\n${chunk.join("\n")}\n\`\`\``));
    chunk = [];
  };
  for (const line of lines.map(format)) {
    const size = chunk.reduce((n, l) => n + l.length + 1, 0);
    if (size + line.length + 10 > LIMITS.sectionText) flush();
    chunk.push(line);
  }
  if (chunk.length > 0) flush();
  blocks.push(
    context(
      `checked ${now.toISOString().slice(0, 19).replace("T", " ")} UTC · \`/llm status <host>\` for details`,
    ),
  );
  const text = `${title}: ${rows.map((r) => `${r.status.host} ${r.status.verdict}`).join(", ")}`;
  return message(text, blocks);
}
