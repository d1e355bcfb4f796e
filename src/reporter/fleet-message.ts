import { keepEnd } from "../grammar/model-name.ts";
import {
  alignColumns,
  context,
  header,
  LIMITS,
  message,
  type SlackMessage,
  section,
  truncate,
} from "../slack/blocks.ts";
import type { HostStatus } from "../status/probe-host.ts";
import { servedModel } from "./status-message.ts";

export interface FleetRow {
  status: HostStatus;
  /** The swap running on the host now, if any. */
  active?: { id: string; step: string; repo: string };
  /** A lock nothing will ever release: the line that says who holds it and how to clear it. */
  stuck?: string;
  /** The host's last finished swap. */
  last?: { outcome: string; repo: string };
  /** Healthy as the health monitor's last check saw it (`status.checkedAt`), not probed for this answer. */
  fromMonitor?: true;
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
  const title = fleetTitle(rows);
  const { head, lines } = fleetTable(rows);
  // Header, the tables, a line for the hosts left out, the stuck locks and the context line: at most 50.
  const tables = tableSections(head, lines)
    .filter((lines) => lines.length > 1)
    .slice(0, LIMITS.blocks - 4);
  const blocks = [header(title), ...tables.map(fenced)];
  const shown = tables.reduce((n, table) => n + table.length - 1, 0);
  const left = rows.length - shown;
  if (left > 0) {
    const leftUnhealthy = rows.slice(shown).filter((r) => r.status.verdict !== "healthy").length;
    blocks.push(
      section(
        `… ${left} more ${left === 1 ? "host" : "hosts"} not shown${leftUnhealthy > 0 ? ` (${leftUnhealthy} of them not healthy)` : ""}: \`/llm status <host>\` shows any one`,
      ),
    );
  }
  blocks.push(...stuckSection(rows), context(`${checked(now)} · \`/llm status <host>\` for details`));
  return message(fallback(title, rows), blocks);
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

/** "Fleet: N hosts, M healthy". */
function fleetTitle(rows: readonly FleetRow[]): string {
  const healthy = rows.filter((r) => r.status.verdict === "healthy").length;
  return `Fleet: ${rows.length} host${rows.length === 1 ? "" : "s"}, ${healthy} healthy`;
}

/** When the fleet was probed, for the context line. */
function checked(now: Date): string {
  return `checked ${now.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/**
 * Which rows were not probed for this answer: counted healthy from the health monitor's last check, and
 * how old the oldest of those checks is ("" when every host was probed).
 */
function monitorNote(rows: readonly FleetRow[], now: Date): string {
  const seen = rows.filter((r) => r.fromMonitor === true);
  if (seen.length === 0) return "";
  const oldest = Math.min(...seen.map((r) => r.status.checkedAt.getTime()));
  const age = Math.max(0, Math.round((now.getTime() - oldest) / 1000));
  const probed = rows.length - seen.length;
  return ` (${seen.length} healthy host${seen.length === 1 ? "" : "s"} as the health monitor saw ${seen.length === 1 ? "it" : "them"} in the last ${age} s; ${probed === 0 ? "none" : probed} probed now)`;
}

/** The first five stuck locks' lines, as one section (none when no lock is stuck). */
function stuckSection(rows: readonly FleetRow[]): SlackMessage["blocks"] {
  const stuck = rows.filter((r) => r.stuck !== undefined).slice(0, 5);
  return stuck.length === 0
    ? []
    : [section(truncate(stuck.map((r) => r.stuck).join("\n"), LIMITS.sectionText))];
}

/** The fleet table's rows as aligned text: its header line and one line per host. */
function fleetTable(rows: readonly FleetRow[]): { head: string; lines: string[] } {
  const cells = rows.map((row) => {
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
  const [head = "", ...lines] = alignColumns([["HOST", "STATE", "MODEL", "UNIT", "GPUS", "SWAP"], ...cells]);
  return { head, lines };
}

/**
 * The table's lines split into pieces that each fit a section as a code block, every piece starting
 * with the header line (the last piece is the header alone when there are no lines).
 */
function tableSections(head: string, lines: readonly string[]): string[][] {
  const pieces: string[][] = [];
  let piece = [head];
  for (const line of lines) {
    if (piece.reduce((n, l) => n + l.length + 1, 0) + line.length + 10 > LIMITS.sectionText) {
      pieces.push(piece);
      piece = [head];
    }
    piece.push(line);
  }
  pieces.push(piece);
  return pieces;
}

/** A piece of the table as a section's code block. */
function fenced(lines: readonly string[]): SlackMessage["blocks"][number] {
  return section(`\`\`\`\n${lines.join("\n")}\n\`\`\``);
}

/** Above this many hosts, `/llm status` answers with the summary; `--all` gives the whole table. */
export const FLEET_TABLE_ROWS = 25;

/** Rows of hosts that want a look, in a table of the summary (more are counted, not shown). */
const SUMMARY_ROWS = 40;

/** How much a host wants a look: down first, then unreachable, starting, stuck, swapping; healthy last. */
function concern(row: FleetRow): number {
  if (row.status.verdict === "failed" || row.status.verdict === "not-serving") return 0;
  if (row.status.verdict === "unreachable") return 1;
  if (row.status.verdict === "starting") return 2;
  if (row.stuck !== undefined) return 3;
  if (row.active !== undefined) return 4;
  return 5;
}

/**
 * `/llm status` of a big fleet: counts by state, then the hosts that want a look (down, unreachable,
 * starting, a stuck lock, swapping; worst first, at most 40 in a table, the rest counted), and how to get
 * the whole table. One message, well within Slack's limits (50 blocks, 3,000 characters a section).
 */
export function renderFleetSummary(rows: readonly FleetRow[], now = new Date()): SlackMessage {
  const title = fleetTitle(rows);
  const count = (verdict: HostStatus["verdict"]) => rows.filter((r) => r.status.verdict === verdict).length;
  const tally = (Object.keys(STATE) as HostStatus["verdict"][])
    .map((verdict) => [STATE[verdict], count(verdict)] as const)
    .filter(([, n]) => n > 0)
    .map(([label, n]) => `${label} *${n}*`);
  const swapping = rows.filter((r) => r.active !== undefined && r.stuck === undefined).length;
  const stuck = rows.filter((r) => r.stuck !== undefined).length;
  if (swapping > 0) tally.push(`🔄 swapping *${swapping}*`);
  if (stuck > 0) tally.push(`🔒 stuck lock *${stuck}*`);
  const wanting = rows
    .map((row, index) => ({ row, index }))
    .filter(({ row }) => concern(row) < 5)
    .sort((a, b) => concern(a.row) - concern(b.row) || a.index - b.index)
    .map(({ row }) => row);
  const blocks = [header(title), section(tally.join("  ·  "))];
  if (wanting.length === 0) {
    blocks.push(section("Every host is healthy and none is swapping."));
  } else {
    const { head, lines } = fleetTable(wanting.slice(0, SUMMARY_ROWS));
    blocks.push(...tableSections(head, lines).map(fenced));
    const more = wanting.length - SUMMARY_ROWS;
    if (more > 0)
      blocks.push(section(`… and ${more} more that want a look: \`/llm status --all\` shows every host`));
    blocks.push(...stuckSection(wanting));
  }
  blocks.push(
    context(
      `${checked(now)}${monitorNote(rows, now)} · \`/llm status --all\` for every host · \`/llm status <host>\` for one`,
    ),
  );
  return message(fallback(title, rows), blocks);
}

/**
 * `/llm status --all`: the whole fleet table over as many messages as it takes, each within Slack's
 * limits (at most 45 table sections of at most 3,000 characters), the first with the title, each saying
 * which part of how many it is.
 */
export function renderFleetPages(rows: readonly FleetRow[], now = new Date()): SlackMessage[] {
  const { head, lines } = fleetTable(rows);
  const sections = tableSections(head, lines);
  const perPage = LIMITS.blocks - 5;
  const pages: string[][][] = [];
  for (let i = 0; i < sections.length; i += perPage) pages.push(sections.slice(i, i + perPage));
  const title = fleetTitle(rows);
  return pages.map((page, i) => {
    const part = pages.length > 1 ? ` (part ${i + 1} of ${pages.length})` : "";
    const blocks = [header(`${title}${part}`), ...page.map(fenced)];
    if (i === pages.length - 1) blocks.push(...stuckSection(rows), context(checked(now)));
    return message(i === 0 ? fallback(title, rows) : `${title}${part}`, blocks);
  });
}
