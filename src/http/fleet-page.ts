import { utcTime } from "../format-duration.ts";
import type { FleetView } from "../status/fleet-view.ts";
import { auditTable, historyTable, hostsTable, inFlightTable, tally } from "./fleet-sections.ts";
import { type Html, html } from "./html.ts";

/** Where the fleet page lives on the ops server. */
export const FLEET_PATH = "/fleet";

/** The part of the page the live refresh replaces: everything read from the store. */
export function renderFleetBody(view: FleetView): Html {
  return html`<p class="asof" id="asof">As of ${utcTime(view.at)} · state from the health monitor's checks; <span class="mono">/llm status &lt;host&gt;</span> asks a host itself</p>
${tally(view)}
${inFlightTable(view)}
${hostsTable(view)}
${historyTable(view)}
${auditTable(view.audit)}`;
}

/** The whole page: the body above, and the script that refreshes it every `refreshMs`. */
export function renderFleetPage(view: FleetView, who: string, refreshMs: number): Html {
  const seconds = Math.round(refreshMs / 100) / 10;
  return shell(
    "modelswap fleet",
    html`<header><h1>modelswap fleet</h1>
<span id="live" class="live" role="status">Live: refreshes every ${seconds} s</span>
<form method="post" action="${FLEET_PATH}/logout" class="who"><span>Signed in as <strong>${who}</strong></span> <button type="submit">Sign out</button></form>
</header>
<noscript><p class="state warn">Without JavaScript this page does not refresh: reload it to see changes.</p></noscript>
<main id="fleet" data-refresh-ms="${refreshMs}">${renderFleetBody(view)}</main>`,
  );
}

/** The sign-in form: an operator token with the read scope; `problem` says why the last one was refused. */
export function renderLogin(problem?: { message: string; fix: string }): Html {
  return shell(
    "modelswap fleet: sign in",
    html`<main class="login"><h1>modelswap fleet</h1>
<form method="post" action="${FLEET_PATH}/login">
<label for="token">Operator token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<button type="submit">Sign in</button>
</form>
${problem === undefined ? "" : html`<p class="state bad" id="problem" role="alert">${problem.message}</p><p class="sub">${problem.fix}</p>`}
<p class="sub">Your token from the config's <span class="mono">operators:</span> (an operator with the <strong>read</strong> scope). This browser keeps it in a cookie only this page can read, for 12 hours or until you sign out.</p>
</main>`,
  );
}

function shell(title: string, body: Html): Html {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<link rel="stylesheet" href="${FLEET_PATH}/fleet.css"><script src="${FLEET_PATH}/fleet.js" defer></script>
</head><body>${body}</body></html>
`;
}
