import { duration, durationSince, utcTime } from "../format-duration.ts";
import { type HistoryRow, historyRow } from "../reporter/history-message.ts";
import { stuckLockLine } from "../reporter/host-lock-message.ts";
import { STAGE_LABEL } from "../reporter/swap-card.ts";
import type { FleetHost, FleetView } from "../status/fleet-view.ts";
import type { MonitorVerdict } from "../status/monitor-view.ts";
import type { AuditEntry } from "../store/audit-log.ts";
import { STAGES, type StageState, type SwapRecord } from "../swap/swap-record.ts";
import { type Html, html } from "./html.ts";

/*
 * The fleet page's four tables, as HTML whose every value is escaped (html.ts): the hosts, the swaps in
 * flight with their stages, the ledger and the audit stream. Each state is said in words beside its
 * colour, so nothing depends on telling red from green.
 */

/** The words and colour of each verdict, and how much it wants a look (the hosts table's order). */
const VERDICT: Record<MonitorVerdict, { word: string; tone: string; rank: number }> = {
  down: { word: "down", tone: "bad", rank: 0 },
  failing: { word: "failing", tone: "warn", rank: 1 },
  stale: { word: "not checked lately", tone: "idle", rank: 2 },
  unchecked: { word: "not checked yet", tone: "idle", rank: 3 },
  recovering: { word: "recovering", tone: "warn", rank: 4 },
  switching: { word: "switching", tone: "busy", rank: 5 },
  healthy: { word: "healthy", tone: "good", rank: 7 },
};

/**
 * A stage's state and a swap's outcome, marked with characters every font has (Slack's emoji are not on
 * every operator's machine) beside the same words as the card and `/llm history`.
 */
const STAGE_MARK: Record<StageState["state"], string> = {
  pending: "○",
  running: "►",
  done: "✓",
  failed: "✗",
  skipped: "–",
};

const OUTCOME: Record<HistoryRow["outcome"], { word: string; tone: string }> = {
  succeeded: { word: "✓ succeeded", tone: "good" },
  rolled_back: { word: "↩ rolled back", tone: "warn" },
  failed: { word: "✗ failed", tone: "bad" },
  rejected: { word: "✗ rejected", tone: "idle" },
  expired: { word: "✗ expired", tone: "idle" },
  cancelled: { word: "✗ cancelled", tone: "idle" },
  planned: { word: "○ dry run", tone: "idle" },
  "in progress": { word: "► in progress", tone: "busy" },
};

function outcome(o: HistoryRow["outcome"]): Html {
  return html`<span class="outcome ${OUTCOME[o].tone}">${OUTCOME[o].word}</span>`;
}

/** Down first, then failing, unchecked, recovering, stuck, swapping; healthy last; by name within each. */
function rank(host: FleetHost): number {
  if (host.swaps.stuck !== undefined && VERDICT[host.health.verdict].rank > 4) return 4.5;
  if (host.swaps.active !== undefined && host.health.verdict === "healthy") return 6;
  return VERDICT[host.health.verdict].rank;
}

const byName = new Intl.Collator("en", { numeric: true });

export function sortHosts(hosts: readonly FleetHost[]): FleetHost[] {
  return [...hosts].sort((a, b) => rank(a) - rank(b) || byName.compare(a.name, b.name));
}

/** "Fleet: 60 hosts · 50 healthy · 10 down · 1 swapping". */
export function tally(view: FleetView): Html {
  const counts = new Map<MonitorVerdict, number>();
  for (const h of view.hosts) counts.set(h.health.verdict, (counts.get(h.health.verdict) ?? 0) + 1);
  const parts = (Object.keys(VERDICT) as MonitorVerdict[])
    .filter((v) => (counts.get(v) ?? 0) > 0)
    .sort((a, b) => VERDICT[b].rank - VERDICT[a].rank)
    .map((v) => html`<span class="pill ${VERDICT[v].tone}">${counts.get(v)} ${VERDICT[v].word}</span>`);
  const stuck = view.hosts.filter((h) => h.swaps.stuck !== undefined).length;
  if (view.inFlight.length > 0)
    parts.push(html`<span class="pill busy">${view.inFlight.length} swapping</span>`);
  if (stuck > 0) parts.push(html`<span class="pill bad">${stuck} stuck lock${stuck === 1 ? "" : "s"}</span>`);
  const n = view.hosts.length;
  return html`<p class="tally" id="tally"><strong>${n} host${n === 1 ? "" : "s"}</strong> ${parts}</p>`;
}

export function hostsTable(view: FleetView): Html {
  const now = view.at;
  const rows = sortHosts(view.hosts).map((h) => {
    const v = VERDICT[h.health.verdict];
    const failures = h.health.failures === undefined ? "" : ` (${h.health.failures} checks)`;
    const since = h.health.since === undefined ? "" : ` for ${durationSince(h.health.since, now)}`;
    const checked =
      h.health.checkedAt === undefined ? "" : `checked ${durationSince(h.health.checkedAt, now)} ago`;
    const detail = h.health.verdict === "healthy" ? "" : (h.health.detail ?? "");
    return html`<tr data-host="${h.name}" class="${v.tone}">
<td class="host">${h.name}</td>
<td><span class="state ${v.tone}">${v.word}${failures}${since}</span><div class="sub">${checked}</div>${detail === "" ? "" : html`<div class="sub detail">${detail}</div>`}</td>
<td>${model(h)}</td>
<td>${h.engine}</td>
<td class="mono">${h.unit}<div class="sub">port ${h.port}</div></td>
<td>${frontDoor(h)}</td>
<td>${swapCell(h)}</td>
</tr>`;
  });
  return html`<section id="hosts"><h2>Hosts</h2>
<table class="hosts"><thead><tr><th>Host</th><th>State</th><th>Model</th><th>Engine</th><th>Unit</th><th>Front door</th><th>Swap</th></tr></thead>
<tbody>${rows}</tbody></table></section>`;
}

function model(h: FleetHost): Html {
  const s = h.serving;
  if (s?.repo === undefined)
    return html`<span class="sub" title="modelswap has not swapped this host yet: /llm status ${h.name} asks the engine">not recorded yet</span>`;
  return html`<span class="model">${s.repo}</span>${s.sha === undefined ? "" : html`<span class="sub"> @ ${s.sha.slice(0, 7)}</span>`}<div class="sub">since ${utcTime(s.since)}</div>`;
}

function frontDoor(h: FleetHost): Html {
  const fd = h.frontDoor;
  if (fd === undefined) return html`<span class="sub">none</span>`;
  const others = fd.slots.filter((s) => s !== fd.live);
  return html`HAProxy <span class="mono">${fd.backend}</span><div class="sub">${fd.live === undefined ? "no slot at this port" : `via ${fd.live}`}${others.length === 0 ? "" : ` · standby ${others.join(", ")}`}</div>`;
}

function swapCell(h: FleetHost): Html {
  const { active, stuck, last } = h.swaps;
  if (stuck !== undefined)
    return html`<span class="state bad">stuck lock</span><div class="sub detail">${plain(stuckLockLine(stuck))}</div>`;
  if (active !== undefined)
    return html`<span class="state busy">swapping</span> to <span class="model">${active.request.model.repo}</span><div class="sub">${currentStage(active)} · swap <span class="mono">${active.id}</span></div>`;
  if (last?.outcome !== undefined)
    return html`<span class="sub">last: ${outcome(last.outcome)} ${utcTime(last.createdAt)}</span>`;
  return html``;
}

/** The running stages' labels (download, build and approval run at once), with their details; else the step. */
function currentStage(record: SwapRecord): string {
  const running = STAGES.filter((s) => record.stages[s].state === "running");
  if (running.length === 0) return record.step;
  return running
    .map((s) => {
      const detail = record.stages[s].detail;
      return `${STAGE_LABEL[s]}${detail === undefined ? "" : ` (${detail})`}`;
    })
    .join(" · ");
}

/** The Slack line's words without its mrkdwn marks. */
function plain(mrkdwn: string): string {
  return mrkdwn.replace(/[*`]/g, "").replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&amp;", "&");
}

export function inFlightTable(view: FleetView): Html {
  if (view.inFlight.length === 0)
    return html`<section id="in-flight"><h2>Swaps in flight</h2><p class="sub">None: no swap holds a host.</p></section>`;
  const rows = view.inFlight.map((r) => {
    const stages = STAGES.map((s) => {
      const st = r.stages[s];
      return html`<li class="stage ${st.state}" title="${st.detail ?? st.state}">${STAGE_MARK[st.state]} ${STAGE_LABEL[s]}${st.state === "running" && st.detail !== undefined ? html`<span class="sub"> ${st.detail}</span>` : ""}</li>`;
    });
    return html`<tr data-swap="${r.id}">
<td class="mono">${r.id}</td><td class="host">${r.host}</td>
<td><span class="model">${r.request.model.repo}</span>${r.plan === undefined ? "" : html`<span class="sub"> @ ${r.plan.model.sha.slice(0, 7)}</span>`}</td>
<td>${r.requester}<div class="sub">${durationSince(r.createdAt, view.at)} ago</div></td>
<td><ol class="stages">${stages}</ol></td></tr>`;
  });
  return html`<section id="in-flight"><h2>Swaps in flight</h2>
<table><thead><tr><th>Swap</th><th>Host</th><th>Model</th><th>Requested by</th><th>Stages</th></tr></thead>
<tbody>${rows}</tbody></table></section>`;
}

export function historyTable(view: FleetView): Html {
  const rows = view.history.map((record) => {
    const row = historyRow(record);
    const people = [
      row.approver === undefined ? undefined : `approved by ${row.approver}`,
      row.rejecter === undefined ? undefined : `rejected by ${row.rejecter}`,
    ].filter((p) => p !== undefined);
    const bench =
      row.bench === undefined
        ? ""
        : `${tokens(row.bench.single)} tok/s at 1 stream · ${tokens(row.bench.loaded)} loaded`;
    return html`<tr data-swap="${row.id}">
<td>${utcTime(row.at)}</td><td class="host">${row.host}</td>
<td>${outcome(row.outcome)}${row.step === undefined ? "" : html`<span class="sub"> (${row.step})</span>`}</td>
<td><span class="model">${row.model}</span>${row.sha === undefined ? "" : html`<span class="sub"> @ ${row.sha.slice(0, 7)}</span>`}${bench === "" ? "" : html`<div class="sub">${bench}</div>`}</td>
<td>${row.requester}${people.length === 0 ? "" : html`<div class="sub">${people.join(" · ")}</div>`}</td>
<td>${row.downtimeSeconds === undefined ? "" : duration(row.downtimeSeconds)}${row.clients === undefined ? "" : html`<div class="sub">${row.clients}</div>`}</td>
<td class="detail">${row.reason ?? ""}</td></tr>`;
  });
  const unreadable =
    view.unreadable === 0
      ? ""
      : html`<p class="state warn">${view.unreadable} record(s) could not be read (written by another modelswap version?); the bot's log names them</p>`;
  return html`<section id="history"><h2>History</h2>${unreadable}
${rows.length === 0 ? html`<p class="sub">No swaps recorded yet.</p>` : html`<table><thead><tr><th>Requested</th><th>Host</th><th>Outcome</th><th>Model</th><th>People</th><th>Downtime</th><th>Why</th></tr></thead><tbody>${rows}</tbody></table>`}</section>`;
}

function tokens(value: number | undefined): string {
  if (value === undefined || !Number.isFinite(value)) return "–";
  return value >= 100 ? value.toFixed(0) : value.toFixed(1);
}

export function auditTable(entries: readonly AuditEntry[]): Html {
  const rows = entries.map(
    (e) => html`<tr data-audit="${e.id}"><td>${utcTime(e.at)}</td>
<td>${typeof e.kind === "string" ? e.kind : e.kind.unknown}</td><td>${e.who}</td><td class="host">${e.host ?? ""}</td>
<td class="mono">${e.swap ?? ""}${e.stage === undefined ? "" : html`<div class="sub">${e.stage}</div>`}</td><td class="detail">${e.detail}</td></tr>`,
  );
  return html`<section id="audit"><h2>Audit stream</h2>
${rows.length === 0 ? html`<p class="sub">Nothing recorded yet.</p>` : html`<table><thead><tr><th>When</th><th>What</th><th>Who</th><th>Host</th><th>Swap</th><th>Detail</th></tr></thead><tbody>${rows}</tbody></table>`}</section>`;
}
