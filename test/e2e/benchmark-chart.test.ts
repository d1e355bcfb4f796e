import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { COLOR, PALETTE } from "../../src/reporter/chart/bar-chart.ts";
import { type Bench, CHANNEL, QUICK_BENCH, startBench } from "../../testbench/bench.ts";
import { makeModel } from "../../testbench/hub/index.ts";
import { renderConversation } from "../../testbench/slack/index.ts";
import { SwapDriver, waitForLog } from "../../testbench/swap-driver.ts";
import { countColor, decodePng } from "../support/png-decode.ts";

/**
 * The benchmark chart end to end: the real bot uploads a PNG into the swap's thread with Slack's upload
 * flow (files.getUploadURLExternal → POST the bytes → files.completeUploadExternal), and a chart Slack
 * refuses leaves the swap and its table alone.
 */
let bench: Bench;
let swaps: SwapDriver;

beforeAll(async () => {
  bench = await startBench({
    ...QUICK_BENCH,
    swaps: { pollSeconds: 0.3, cardUpdateSeconds: 1, healthTimeoutSeconds: 30 },
    hosts: [{ name: "bw-chart", gpus: "8x-rtx-pro-6000-blackwell", serving: false }],
  });
  bench.hub.addModel(makeModel("llama-bf16-small", { id: "sim-org/chart-first", gated: false }));
  bench.hub.addModel(makeModel("llama-bf16-small", { id: "sim-org/chart-second", gated: false }));
  await bench.startBot();
  swaps = new SwapDriver(bench);
}, 120_000);

afterAll(async () => {
  await swaps?.close();
  await bench?.stop();
});

describe("the benchmark chart", () => {
  it("a chart Slack refuses is logged; the swap succeeds and the table is in the thread", async () => {
    // an app installed before files:write was added to the manifest
    bench.slack.failNext("files.getUploadURLExternal", "missing_scope");
    const card = await swaps.request("sim-org/chart-first", "bw-chart");
    await swaps.approve(card.ts);
    await swaps.outcome(card.ts, /Swapped/);
    const thread = bench.slack.thread(CHANNEL, card.ts);
    expect(thread.some((m) => m.text.startsWith("Benchmark:") && m.text.includes("output tok/s"))).toBe(true);
    expect(thread.filter((m) => m.files !== undefined)).toEqual([]);
    expect(bench.slack.calls("files.getUploadURLExternal").map((c) => c.error)).toEqual(["missing_scope"]);
    // pino writes asynchronously: the line may land a moment after the card
    const [line] = await waitForLog(join(bench.dir, "bot.log"), /could not upload the benchmark chart/, {
      timeoutMs: 5_000,
    });
    expect(line).toContain("missing_scope");
  }, 90_000);

  it("uploads the chart into the swap's thread, after the table, comparing with the model before", async () => {
    const card = await swaps.request("sim-org/chart-second", "bw-chart");
    await swaps.approve(card.ts);
    await swaps.outcome(card.ts, /Swapped/);

    const thread = bench.slack.thread(CHANNEL, card.ts);
    const table = thread.findIndex((m) => m.text.startsWith("Benchmark:"));
    const shared = thread.findIndex((m) => m.files !== undefined);
    expect(table).toBeGreaterThanOrEqual(0);
    expect(shared).toBeGreaterThan(table);
    const message = thread[shared]!;
    expect(message.thread_ts).toBe(card.ts);
    expect(message.source).toBe("upload");
    expect(message.text).toMatch(
      /^📊 Benchmark of `sim-org\/chart-second@[0-9a-f]{7}` vs `sim-org\/chart-first` on bw-chart$/,
    );
    const [file] = message.files!;
    expect(file).toMatchObject({ mimetype: "image/png", filetype: "png", original_w: 720 });
    expect(file!.title).toMatch(/^Benchmark on bw-chart: sim-org\/chart-second@[0-9a-f]{7}$/);
    expect(file!.name).toMatch(/^benchmark-sw-[\w-]+\.png$/);
    expect(file!.alt_text).toMatch(/^Benchmark: [\d.]+ output tok\/s at 1 stream/);

    // the bytes Slack keeps are a PNG with both models' bars
    const download = await fetch(file!.url_private, {
      headers: { authorization: `Bearer ${bench.botToken}` },
    });
    expect(download.status).toBe(200);
    const png = decodePng(Buffer.from(await download.arrayBuffer()));
    expect([png.width, png.height]).toEqual([720, file!.original_h]);
    expect(countColor(png, PALETTE[COLOR.now]!)).toBeGreaterThan(1000);
    expect(countColor(png, PALETTE[COLOR.before]!)).toBeGreaterThan(1000);

    // Slack's three steps, in order, into the swap's thread
    const calls = bench.slack.calls().filter((c) => c.method.startsWith("files.") && c.ok);
    expect(calls.map((c) => c.method)).toEqual([
      "files.getUploadURLExternal",
      "files.completeUploadExternal",
    ]);
    expect(calls[1]!.args).toMatchObject({ channel_id: CHANNEL, thread_ts: card.ts });
    expect(bench.slack.warnings().map((w) => w.warning)).not.toContainEqual(
      expect.stringMatching(/upload_length_mismatch/),
    );
    expect(renderConversation(bench.slack, CHANNEL, { times: false })).toMatch(
      /\[image: Benchmark on bw-chart: sim-org\/chart-second@[0-9a-f]{7} \(720×\d+ PNG\)\]/,
    );
  }, 90_000);
});
