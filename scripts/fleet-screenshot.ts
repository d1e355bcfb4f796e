/**
 * Draws docs/fleet-page.png: the fleet page of the 60-host bench (testbench/fleet-bench.ts) in a real
 * headless Chromium, after a swap that succeeded, one that was rejected and one waiting for approval.
 *
 *     npx tsx scripts/fleet-screenshot.ts [out.png]
 */
import { writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { USERS } from "../testbench/bench.ts";
import { SWAP_HOST, startFleetBench } from "../testbench/fleet-bench.ts";
import { startChromium } from "../testbench/headless-chromium.ts";
import { addSimModel, SwapDriver } from "../testbench/swap-driver.ts";

const out = resolve(process.argv[2] ?? new URL("../docs/fleet-page.png", import.meta.url).pathname);
const WIDTH = 1440;
/** The top of the page: the tally, the swap in flight, the down hosts and the first healthy ones. */
const HEIGHT = 1500;

async function main(): Promise<void> {
  const browser = await startChromium({ width: WIDTH });
  const { bench, base, tokens } = await startFleetBench({ logTo: "silent" });
  const swaps = new SwapDriver(bench);
  try {
    console.log("bench up: 60 hosts; swapping on", SWAP_HOST);
    const done = await swaps.request(addSimModel(bench, "Qwen3-8B-FP8"), SWAP_HOST);
    await swaps.approve(done.ts);
    await swaps.outcome(done.ts, /Swapped/, 120_000);
    const rejected = await swaps.request(addSimModel(bench, "Llama-3.1-8B-Instruct"), SWAP_HOST);
    await swaps.reject(rejected.ts);
    await swaps.outcome(rejected.ts, /Rejected/, 60_000);
    const waiting = await swaps.request(addSimModel(bench, "Qwen3-32B-FP8"), SWAP_HOST, {
      user: USERS.carol,
    });
    await swaps.plan(waiting.ts);

    const page = await browser.newPage();
    await page.goto(`${base}/fleet`);
    await page.type("#token", tokens.reader);
    await page.click("button[type=submit]");
    await page.waitForText(/Signed in as olivia/, "the fleet page");
    await page.waitForText(/50 healthy[\s\S]*10 down/, "the monitor's verdicts", "#tally", 120_000);
    await page.waitForText(/► Approval/, "the swap waiting for approval", "#in-flight");
    const png = await page.screenshot(WIDTH, HEIGHT);
    await writeFile(out, png);
    console.log(`wrote ${out} (${Math.round(png.length / 1024)} KiB)`);
    // what one refresh costs: the page's body for 60 hosts, read afresh (past the shared read's second)
    const times: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      await new Promise((done) => setTimeout(done, 1100));
      const started = performance.now();
      const answer = await fetch(`${base}/fleet/live`, {
        headers: { authorization: `Bearer ${tokens.reader}` },
      });
      await answer.text();
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    console.log(
      `/fleet/live for 60 hosts: median ${times[2]!.toFixed(0)} ms, max ${times[4]!.toFixed(0)} ms`,
    );
  } finally {
    await swaps.close();
    await browser.close();
    await bench.stop();
  }
}

await main();
