import { keepEnd } from "../grammar/model-name.ts";
import type { HostStatus } from "../status/probe-host.ts";
import { context, header, LIMITS, message, type SlackMessage, section, truncate } from "./message.ts";
import { servedModel } from "./status-message.ts";

export interface FleetRow {
  status: HostStatus;
  /** The swap running on the host now, if any. */
  active?: { id: string; step: string; repo: string };
  /** A lock nothing will ever release: the line that says who holds it and how to clear it. */
  stuck?: string;
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
    const model = s.connection !== undefined ? "—" : keepEnd(servedModel(s) ?? "none", 40);
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
    const swap = row.stuck
      ? "🔒 stuck lock (below)"
      : row.active
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
  // Header, the tables, a line for the hosts left out, the stuck locks and the context line: at most 50.
  const maxTables = LIMITS.blocks - 4;
  let chunk: string[] = [format(head)];
  let shown = 0;
  const flush = () => {
    blocks.push(section(`\`\`\`\n${chunk.join("\n")}\n\`\`\``));
    chunk = [format(head)];
  };
  for (const line of lines.map(format)) {
    const size = chunk.reduce((n, l) => n + l.length + 1, 0);
    if (size + line.length + 10 > LIMITS.sectionText) {
      if (blocks.length - 1 >= maxTables - 1) break;
      flush();
    }
    chunk.push(line);
    shown += 1;
  }
  if (chunk.length > 1) flush();
  const left = rows.length - shown;
  if (left > 0) {
    const leftUnhealthy = rows.slice(shown).filter((r) => r.status.verdict !== "healthy").length;
    blocks.push(
      section(
        `… ${left} more ${left === 1 ? "host" : "hosts"} not shown${leftUnhealthy > 0 ? ` (${leftUnhealthy} of them not healthy)` : ""}: \`/llm status <host>\` shows any one`,
      ),
    );
  }
  const stuck = rows.filter((r) => r.stuck !== undefined).slice(0, 5);
  if (stuck.length > 0)
    blocks.push(section(truncate(stuck.map((r) => r.stuck).join("\n"), LIMITS.sectionText)));
  blocks.push(
    context(
      `checked ${now.toISOString().slice(0, 19).replace("T", " ")} UTC · \`/llm status <host>\` for details`,
    ),
  );
  const text = fallback(title, rows);
  return message(text, blocks);
}

/** The fallback text: the count, then the hosts that are not healthy (the ones that matter), as many as fit. */
function fallback(title: string, rows: readonly FleetRow[]): string {
  const unhealthy = rows.filter((r) => r.status.verdict !== "healthy");
  if (unhealthy.length === 0) return `${title}: all healthy`;
  const budget = LIMITS.fallbackText - title.length - 80;
  const named: string[] = [];
  let size = 0;
  for (const row of unhealthy) {
    const item = `${truncate(row.status.host, 40)} ${row.status.verdict}`;
    if (size + item.length + 2 > budget) break;
    named.push(item);
    size += item.length + 2;
  }
  const more = unhealthy.length - named.length;
  return `${title}; not healthy: ${named.join(", ")}${more > 0 ? ` and ${more} more` : ""}`;
}
