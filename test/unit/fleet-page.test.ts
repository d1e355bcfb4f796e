import { describe, expect, it } from "vitest";
import { renderFleetBody } from "../../src/http/fleet-page.ts";
import { escapeHtml, html } from "../../src/http/html.ts";
import type { FleetView } from "../../src/status/fleet-view.ts";
import { monitorView } from "../../src/status/monitor-view.ts";
import type { HostHealthState } from "../../src/store/incidents.ts";

const NOW = Date.parse("2026-12-06T12:00:00Z");
const FRESH = 65_000;

function health(over: Partial<HostHealthState>): HostHealthState {
  return {
    failures: 0,
    passes: 0,
    lastCheck: new Date(NOW - 5000),
    lastResult: "pass",
    lastDetail: "healthy",
    incident: undefined,
    alertsPosted: 0,
    recoveriesPosted: 0,
    ...over,
  };
}

describe("html", () => {
  it("escapes every value put in it, and only markup it made itself goes in as it is", () => {
    const hostile = `<script>alert("x")</script>&'`;
    expect(escapeHtml(hostile)).toBe("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;");
    const cell = html`<td title="${hostile}">${hostile}</td>`;
    expect(cell.text).not.toContain("<script>");
    expect(html`<tr>${[cell, cell]}</tr>`.text).toBe(`<tr>${cell.text}${cell.text}</tr>`);
    expect(html`${undefined}${false}${null}${0}`.text).toBe("0");
  });
});

describe("monitorView", () => {
  it("says down exactly while the alert's incident is open, and recovering once a check passes again", () => {
    const incident = { since: new Date(NOW - 60_000), firstFailure: "refused", lastFailure: "still refused" };
    expect(monitorView(health({ lastResult: "fail", failures: 4, incident }), NOW, FRESH)).toMatchObject({
      verdict: "down",
      since: incident.since,
      detail: "still refused",
    });
    expect(monitorView(health({ lastResult: "pass", passes: 1, incident }), NOW, FRESH).verdict).toBe(
      "recovering",
    );
    // an open incident stays down however old its last check: the alert is still open
    const old = new Date(NOW - 10 * FRESH);
    expect(monitorView(health({ lastResult: "fail", lastCheck: old, incident }), NOW, FRESH).verdict).toBe(
      "down",
    );
  });

  it("tells failing below the threshold, switching, stale and never checked from healthy", () => {
    expect(monitorView(health({}), NOW, FRESH).verdict).toBe("healthy");
    expect(monitorView(health({ lastResult: "fail", failures: 1 }), NOW, FRESH)).toMatchObject({
      verdict: "failing",
      failures: 1,
    });
    expect(monitorView(health({ lastResult: "suppressed" }), NOW, FRESH).verdict).toBe("switching");
    expect(monitorView(health({ lastCheck: new Date(NOW - FRESH - 1) }), NOW, FRESH).verdict).toBe("stale");
    expect(monitorView(health({ lastCheck: undefined, lastResult: undefined }), NOW, FRESH).verdict).toBe(
      "unchecked",
    );
  });
});

describe("renderFleetBody", () => {
  it("shows hostile names from the store as text, down hosts before healthy ones", () => {
    const hostile = `<img src=x onerror="alert(1)">`;
    const view: FleetView = {
      at: new Date(NOW),
      hosts: ["gpu-10", "gpu-2", "gpu-1"].map((name) => ({
        name,
        health: monitorView(
          name === "gpu-10"
            ? health({
                lastResult: "fail",
                incident: { since: new Date(NOW), firstFailure: "x", lastFailure: hostile },
              })
            : health({}),
          NOW,
          FRESH,
        ),
        engine: "sglang",
        unit: `sglang-${name}.service`,
        port: 30000,
        serving: {
          unit: `sglang-${name}.service`,
          repo: hostile,
          since: new Date(NOW).toISOString(),
          engine: "sglang" as const,
        },
        swaps: {},
      })),
      inFlight: [],
      history: [],
      unreadable: 0,
      audit: [
        { id: "1-0", at: new Date(NOW).toISOString(), kind: "config", who: "modelswap", detail: hostile },
      ],
    };
    const page = renderFleetBody(view).text;
    expect(page).not.toContain("<img");
    expect(page).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;");
    const order = [...page.matchAll(/data-host="([^"]+)"/g)].map((m) => m[1]);
    expect(order).toEqual(["gpu-10", "gpu-1", "gpu-2"]);
  });
});
