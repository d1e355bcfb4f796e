/*
 * The fleet page's stylesheet and script, served as files of their own so the Content-Security-Policy
 * can forbid every inline script and style. The script polls `/fleet/live` (the page's body, rendered
 * and escaped by the server) and puts it in place: no framework, nothing built.
 */

export const FLEET_CSS = `
:root { color-scheme: light; --bad: #b3261e; --warn: #8a5a00; --good: #1e6b34; --busy: #1d4f91; --idle: #5f6368; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: #1f1f1f; background: #fafafa; }
header { display: flex; gap: 16px; align-items: baseline; padding: 10px 20px; background: #fff; border-bottom: 1px solid #ddd; position: sticky; top: 0; }
header h1 { font-size: 18px; margin: 0; }
.who { margin-left: auto; }
main { padding: 8px 20px 40px; }
h2 { font-size: 16px; margin: 22px 0 6px; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; vertical-align: top; padding: 4px 8px; border-bottom: 1px solid #eee; }
th { position: sticky; top: 44px; background: #f1f3f4; font-weight: 600; }
tbody tr:nth-child(even) { background: #fcfcfc; }
.mono, .host { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 13px; }
.host { font-weight: 600; white-space: nowrap; }
.model { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 13px; overflow-wrap: anywhere; }
.sub { color: #5f6368; font-size: 12px; }
.detail { overflow-wrap: anywhere; max-width: 48em; }
table.hosts td:nth-child(2) { max-width: 24em; }
table.hosts td:nth-child(3) { min-width: 14em; }
.outcome { font-weight: 600; white-space: nowrap; }
.outcome.bad { color: var(--bad); } .outcome.warn { color: var(--warn); } .outcome.good { color: var(--good); }
.outcome.busy { color: var(--busy); } .outcome.idle { color: var(--idle); }
.state { font-weight: 600; white-space: nowrap; }
.state::before { content: "● "; }
.state.bad::before { content: "▲ "; }
.state.idle::before { content: "○ "; }
.state.bad, .pill.bad { color: var(--bad); } .state.warn, .pill.warn { color: var(--warn); }
.state.good, .pill.good { color: var(--good); } .state.busy, .pill.busy { color: var(--busy); }
.state.idle, .pill.idle { color: var(--idle); }
tr.bad td:first-child { box-shadow: inset 4px 0 var(--bad); } tr.warn td:first-child { box-shadow: inset 4px 0 var(--warn); }
.tally .pill { display: inline-block; margin-left: 10px; font-weight: 600; }
.asof { color: #5f6368; margin: 8px 0 0; font-size: 12px; }
.live { color: var(--good); font-size: 12px; } .live.failed { color: var(--bad); font-weight: 600; }
ol.stages { list-style: none; margin: 0; padding: 0; display: flex; flex-wrap: wrap; gap: 2px 10px; }
.stage.pending { color: #80868b; } .stage.running { color: var(--busy); font-weight: 600; } .stage.failed { color: var(--bad); }
.login { max-width: 28em; margin: 60px auto; }
.login input { display: block; width: 100%; margin: 6px 0 10px; padding: 6px; font: inherit; }
button { font: inherit; padding: 3px 12px; }
`;

export const FLEET_JS = `"use strict";
(() => {
  const body = document.getElementById("fleet");
  const live = document.getElementById("live");
  if (body === null || live === null) return;
  const every = Number(body.dataset.refreshMs) || 5000;
  const steady = live.textContent;
  async function refresh() {
    try {
      const answer = await fetch("/fleet/live", { credentials: "same-origin", cache: "no-store" });
      if (answer.status === 401 || answer.status === 403) {
        window.location.assign("/fleet/login");
        return;
      }
      if (!answer.ok) throw new Error("the server answered HTTP " + answer.status);
      body.innerHTML = await answer.text();
      live.textContent = steady;
      live.className = "live";
    } catch (error) {
      live.textContent = "Live refresh failed (" + (error instanceof Error ? error.message : String(error)) + "): showing older data, trying again";
      live.className = "live failed";
    }
    setTimeout(refresh, every);
  }
  setTimeout(refresh, every);
})();
`;
