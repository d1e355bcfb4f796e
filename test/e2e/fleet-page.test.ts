import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keys } from "../../src/store/keys.ts";
import {
  DOWN_HOSTS,
  FLEET_SIZE,
  type FleetBench,
  SWAP_HOST,
  startFleetBench,
} from "../../testbench/fleet-bench.ts";
import {
  type ChromiumPage,
  type HeadlessChromium,
  startChromium,
} from "../../testbench/headless-chromium.ts";
import { addSimModel, SwapDriver } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";

/**
 * The fleet page (issue #30) as a person sees it in a real headless Chromium, on a 60-host bench: the
 * sign-in with an operator token, the hosts (down ones first, each state in words), a swap followed live
 * from its approval wait to its new model without reloading, hostile text shown as text, sign-out.
 */
let world: FleetBench;
let browser: HeadlessChromium;
let page: ChromiumPage;
let swaps: SwapDriver;

beforeAll(async () => {
  // no Chromium fails here, loudly (startChromium says how to install it): never a skip
  browser = await startChromium();
  world = await startFleetBench();
  swaps = new SwapDriver(world.bench);
  page = await browser.newPage();
}, 180_000);

afterAll(async () => {
  await swaps?.close();
  await browser?.close();
  await world?.bench.stop();
});

/** Each host row's visible text, in the page's order, by host. */
async function hostRows(): Promise<{ host: string; text: string }[]> {
  return await page.evaluate(
    `[...document.querySelectorAll("#hosts tbody tr")].map((tr) => ({ host: tr.dataset.host, text: tr.innerText }))`,
  );
}

async function rowOf(host: string): Promise<string> {
  return (await hostRows()).find((r) => r.host === host)?.text ?? "";
}

async function signIn(token: string): Promise<void> {
  await page.evaluate(`document.querySelector("#token").value = ""`);
  await page.type("#token", token);
  await page.click("button[type=submit]");
}

describe("the fleet page in Chromium, 60 hosts", () => {
  it("asks for an operator token first, and refuses a wrong one and one without the read scope", async () => {
    await page.goto(`${world.base}/fleet`);
    expect(await page.url()).toBe(`${world.base}/fleet/login`);
    await page.waitForText(/Operator token/, "the sign-in form");

    await signIn("not-a-token-anyone-was-given-0123456789");
    await page.waitForText(/the operator token is not one the config knows/, "the refusal of a wrong token");
    expect(await page.text()).not.toMatch(/gpu-\d\d/);

    await signIn(world.tokens.requester);
    await page.waitForText(/operator rita may request, not read/, "the refusal of a token without read");
    expect(await page.text()).not.toMatch(/gpu-\d\d/);
  }, 60_000);

  it("shows every host, down ones first, each state in words beside its colour", async () => {
    await signIn(world.tokens.reader);
    await page.waitForText(/Signed in as olivia/, "the fleet page");
    // the token went in a cookie the page's scripts cannot read, never into the address
    expect(await page.url()).toBe(`${world.base}/fleet`);
    expect(await page.evaluate("document.cookie")).toBe("");

    // the live refresh brings the monitor's checks in: 10 hosts down (their incident open), 50 healthy
    await page.waitForText(
      /60 hosts[\s\S]*50 healthy[\s\S]*10 down/,
      "the monitor's verdicts",
      "#tally",
      90_000,
    );
    const rows = await hostRows();
    expect(rows).toHaveLength(FLEET_SIZE);
    expect(rows.slice(0, DOWN_HOSTS.length).map((r) => r.host)).toEqual(DOWN_HOSTS);
    for (const row of rows.slice(0, DOWN_HOSTS.length))
      expect(row.text, row.host).toMatch(/^gpu-\d\d\s+down for /);
    for (const row of rows.slice(DOWN_HOSTS.length))
      expect(row.text, row.host).toMatch(/^gpu-\d\d\s+healthy/);
    // healthy ones by name, numbers in order (gpu-02 … gpu-59)
    const healthy = rows.slice(DOWN_HOSTS.length).map((r) => r.host);
    expect(healthy).toEqual([...healthy].sort());
    expect(await rowOf(SWAP_HOST)).toMatch(/HAProxy sglang\s+via blue/);
    expect(await rowOf(DOWN_HOSTS[0]!)).toMatch(/sglang-gpu-06\.service/);
  }, 120_000);

  it("follows a swap live: its stages while it waits for approval, then the host's new model", async () => {
    // a mark in the page: still there at the end, so nothing reloaded it
    await page.evaluate("window.notReloaded = true");
    const card = await swaps.request(addSimModel(world.bench, "fleet-live"), SWAP_HOST);
    const id = swaps.swapId(card.ts);
    await swaps.plan(card.ts);
    const inFlight = await page.waitForText(
      new RegExp(`${id}[\\s\\S]*✓ Preflight and plan[\\s\\S]*► Approval`),
      "the swap waiting for approval, in flight",
      "#in-flight",
      // its preflight on a loaded 2-core machine, then the page's next refresh (every 5 s)
      60_000,
    );
    expect(inFlight).toContain("sim-org/fleet-live");
    expect(inFlight).toContain("○ Switch service");
    expect(await rowOf(SWAP_HOST)).toMatch(
      /swapping to sim-org\/fleet-live\s+.*Approval \(waiting for an approver/,
    );

    await swaps.approve(card.ts);
    await swaps.outcome(card.ts, /Swapped/, 150_000);
    const row = await until(
      async () => {
        const text = await rowOf(SWAP_HOST);
        return /sim-org\/fleet-live @ \w{7}/.test(text) && /last: ✓ succeeded/.test(text) ? text : undefined;
      },
      { what: `${SWAP_HOST}'s row to show its new model`, timeoutMs: 30_000 },
    );
    expect(row).not.toMatch(/swapping/);
    await page.waitForText(/None: no swap holds a host/, "no swap in flight", "#in-flight");
    const history = (await page.text("#history")) ?? "";
    expect(history).toMatch(new RegExp(`${SWAP_HOST}\\s+✓ succeeded\\s+sim-org/fleet-live`));
    expect(history).toContain("approved by U0BOB00001");
    const audit = (await page.text("#audit")) ?? "";
    expect(audit).toMatch(new RegExp(`approval\\s+U0BOB00001\\s+${SWAP_HOST}\\s+${id}`));
    expect(audit).toMatch(/outcome\s+modelswap/);
    expect(await page.evaluate("window.notReloaded")).toBe(true);
  }, 240_000);

  it("shows a hostile model name and audit detail as text, and runs none of it", async () => {
    const hostile = `<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">`;
    const store = await swaps.store();
    const host = "gpu-02";
    // what a swap's final save writes for the host it served (src/store/host-state.ts), with a hostile name
    await store.redis.set(
      keys.serving(host),
      JSON.stringify({
        unit: world.bench.host(host).unit,
        repo: hostile,
        since: new Date().toISOString(),
        engine: "sglang",
      }),
    );
    await store.audit.record({ kind: "config", who: "modelswap", host, detail: `reloaded: ${hostile}` });

    const row = await until(async () => ((await rowOf(host)).includes(hostile) ? rowOf(host) : undefined), {
      what: "the hostile model name on gpu-02's row",
    });
    expect(row).toContain("<script>window.pwned = 1</script>");
    await page.waitForText(
      /reloaded: <script>window\.pwned = 1<\/script><img src=x/,
      "the hostile audit detail",
      "#audit",
    );
    expect(await page.evaluate("window.pwned")).toBeUndefined();
    expect(await page.evaluate(`document.querySelectorAll("#fleet script, #fleet img").length`)).toBe(0);
  }, 60_000);

  it("says so when a refresh fails (Redis stopped), keeps what it showed, and goes on once Redis is back", async () => {
    await world.bench.redis.stop();
    try {
      const live = await page.waitForText(/Live refresh failed/, "the failed refresh said", "#live");
      expect(live).toContain("the server answered HTTP 503");
      expect(await page.text("#hosts")).toContain("gpu-02");
    } finally {
      await world.bench.redis.start();
    }
    await page.waitForText(/^Live: refreshes every 5 s$/, "the refresh working again", "#live", 30_000);
  }, 60_000);

  it("signs out: the page asks for the token again, and its parts refuse a browser without one", async () => {
    const answer = await fetch(`${world.base}/fleet`, { redirect: "manual" });
    expect(answer.status).toBe(303);
    expect(answer.headers.get("location")).toBe("/fleet/login");
    expect(answer.headers.get("content-security-policy")).toContain("script-src 'self'");
    const live = await fetch(`${world.base}/fleet/live`);
    expect(live.status).toBe(401);
    expect(await live.text()).not.toContain("gpu-");

    await page.click("header button");
    await page.waitForText(/Operator token/, "the sign-in form after signing out");
    await page.goto(`${world.base}/fleet`);
    expect(await page.url()).toBe(`${world.base}/fleet/login`);
  }, 30_000);
});
