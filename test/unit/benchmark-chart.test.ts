import { readFile } from "node:fs/promises";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { BenchResult } from "../../src/engine/bench-serving.ts";
import { COLOR, FONT_FAMILY, PALETTE } from "../../src/reporter/chart/bar-chart.ts";
import { renderBenchmarkChart } from "../../src/reporter/chart/benchmark-chart.ts";
import { fitText, textWidth, xmlText } from "../../src/reporter/chart/svg-text.ts";
import { svgToPng } from "../../src/reporter/chart/svg-to-png.ts";
import { countColor, type DecodedPng, decodePng, runsOf } from "../support/png-decode.ts";

describe("svg-text", () => {
  it("escapes XML and replaces what XML cannot hold", () => {
    expect(xmlText(`a<b & "c" 'd'>`)).toBe("a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
    expect(xmlText("nul\u0000 bell\u0007 \uD800 ok µs — ▲")).toBe("nul\uFFFD bell\uFFFD \uFFFD ok µs — ▲");
  });

  it("estimates widths and cuts text to one", () => {
    expect(fitText("short", 100, 16)).toBe("short");
    const cut = fitText("a".repeat(200), 120, 16);
    expect(cut.endsWith("…")).toBe(true);
    expect(textWidth(cut, 16)).toBeLessThanOrEqual(120);
    expect(textWidth("W", 16)).toBeGreaterThan(textWidth("i", 16));
  });
});

/** Dark pixels of a PNG: where text was drawn on white. */
const ink = (png: DecodedPng): number => {
  let dark = 0;
  for (const c of png.packed) if ((c >> 16) + ((c >> 8) & 0xff) + (c & 0xff) < 384) dark += 1;
  return dark;
};
const line = (text: string) =>
  svgToPng(
    `<svg xmlns="http://www.w3.org/2000/svg" width="60" height="30"><rect width="60" height="30" fill="#fff"/><text x="4" y="22" font-size="20" font-family="${FONT_FAMILY}">${xmlText(text)}</text></svg>`,
    FONT_FAMILY,
  ).then((png) => decodePng(png));

describe("svgToPng", () => {
  it("draws every character a label or unit may carry with the shipped font, none as ? or a blank", async () => {
    const question = await line("?");
    expect(ink(question)).toBeGreaterThan(10);
    const missing = await line("\u{10FFFD}"); // a private-use character no font has
    for (const char of ["µ", "—", "–", "▲", "▼", "±", "×", "→", "·", "…", "é", "ß", "Ω", "°"]) {
      const drawn = await line(char);
      expect(ink(drawn), char).toBeGreaterThan(0);
      expect(drawn.packed, char).not.toEqual(question.packed);
      expect(drawn.packed, char).not.toEqual(missing.packed);
    }
  });

  it("draws the same pixels every time (shipped fonts only, no system fonts)", async () => {
    const [a, b] = await Promise.all([line("µs — ▲8.7%"), line("µs — ▲8.7%")]);
    expect(a.packed).toEqual(b.packed);
  });
});

const result = (concurrency: number, tps: number, ttft: number, tpot: number): BenchResult => ({
  maxConcurrency: concurrency,
  outputThroughput: tps,
  medianTtftMs: ttft,
  meanTpotMs: tpot,
  raw: {},
});
const about = { model: "nvidia/Qwen3.5-397B-A17B-NVFP4@0123456", host: "gpu-1", swapId: "sw-20261129-0001" };
const rgb = (color: number) => PALETTE[color] as [number, number, number];

/** Bar heights of a colour in the first row's panels (bars are the tall runs; the legend box is left of x 36). */
function barHeights(png: DecodedPng, color: number, panel: number): number[] {
  const width = (png.width - 40 - 2 * 16) / 3;
  const from = Math.round(20 + panel * (width + 16));
  const runs = runsOf(png, rgb(color), { from: Math.max(36, from), to: Math.round(from + width) });
  const firstRowBottom = Math.min(...runs.map((r) => r.top + r.height));
  return [...new Set(runs.filter((r) => r.top + r.height === firstRowBottom).map((r) => r.height))];
}

const count = (png: DecodedPng, color: number): number => countColor(png, rgb(color));

describe("renderBenchmarkChart", () => {
  it("draws the faster revision's bar taller, lower latency in green and higher in red", async () => {
    const chart = await renderBenchmarkChart(
      { single: result(1, 80, 300, 20), loaded: result(16, 600, 500, 30) },
      {
        model: "nvidia/Qwen3.5-397B-A17B-NVFP4",
        engine: "sglang",
        single: result(1, 40, 200, 25),
        loaded: result(16, 300, 700, 35),
      },
      about,
    );
    // a PNG: the signature, IHDR's width and height, every chunk's CRC, IDAT inflated by node:zlib
    expect(chart.png.subarray(0, 8).toString("hex")).toBe("89504e470d0a1a0a");
    expect(chart.png.subarray(12, 16).toString("latin1")).toBe("IHDR");
    expect([chart.png.readUInt32BE(16), chart.png.readUInt32BE(20)]).toEqual([720, chart.height]);
    const png = decodePng(chart.png);
    expect([png.width, png.height]).toEqual([chart.width, chart.height]);
    expect(png.colorType).toBe(6); // resvg writes RGBA
    expect(chart.png.length).toBeLessThan(100_000);

    // Output tok/s at 1 stream: 80 now vs 40 before, one bar each, the new one twice as tall
    const [now] = barHeights(png, COLOR.now, 0);
    const [before] = barHeights(png, COLOR.before, 0);
    expect(barHeights(png, COLOR.now, 0)).toHaveLength(1);
    expect(now).toBeGreaterThan(40);
    expect(Math.abs(now! - 2 * before!)).toBeLessThanOrEqual(2);
    // TTFT at 1 stream went up (worse): the new bar is the taller one there too, and its note is red
    expect(barHeights(png, COLOR.now, 1)[0]).toBeGreaterThan(barHeights(png, COLOR.before, 1)[0]!);
    expect(count(png, COLOR.better)).toBeGreaterThan(0);
    expect(count(png, COLOR.worse)).toBeGreaterThan(0);

    expect(chart.filename).toBe("benchmark-sw-20261129-0001.png");
    expect(chart.title).toBe(`Benchmark on gpu-1: ${about.model}`);
    expect(chart.altText).toContain("80.0 output tok/s at 1 stream (▲100%)");
    expect(chart.altText).toContain("vs nvidia/Qwen3.5-397B-A17B-NVFP4");
  });

  it("colours no change better or worse when the numbers before are another model's", async () => {
    const chart = await renderBenchmarkChart(
      { single: result(1, 80, 300, 20), loaded: result(16, 600, 500, 30) },
      {
        model: "Qwen/Qwen3-8B",
        engine: "sglang",
        single: result(1, 40, 200, 25),
        loaded: result(16, 300, 700, 35),
      },
      about,
    );
    const png = decodePng(chart.png);
    // both models' bars are drawn, the changes are written, but in neither green nor red
    expect(barHeights(png, COLOR.before, 0)).toHaveLength(1);
    expect(count(png, COLOR.better)).toBe(0);
    expect(count(png, COLOR.worse)).toBe(0);
  });

  it("shows the new model alone when there are no earlier numbers, and n/a for what is missing", async () => {
    const chart = await renderBenchmarkChart(
      { single: result(1, 41.25, Number.NaN, 23.9), loaded: result(16, Number.POSITIVE_INFINITY, 611, 29.8) },
      undefined,
      about,
    );
    const png = decodePng(chart.png);
    expect(count(png, COLOR.before)).toBe(0);
    expect(count(png, COLOR.better) + count(png, COLOR.worse)).toBe(0);
    expect(barHeights(png, COLOR.now, 0)).toHaveLength(1);
    // no TTFT bar in the first row
    expect(
      runsOf(png, rgb(COLOR.now), { from: 262, to: 478 }).filter((r) => r.top + r.height < png.height / 2),
    ).toEqual([]);
  });

  it("draws a label's non-ASCII characters as themselves, not as ?", async () => {
    const pair = { single: result(1, 80, 300, 20), loaded: result(16, 600, 500, 30) };
    const draw = async (model: string) =>
      decodePng((await renderBenchmarkChart(pair, undefined, { ...about, model })).png);
    const [unicode, ascii, questions] = await Promise.all([
      draw("org/µs—naïve"),
      draw("org/us-naive"),
      draw("org/?s?na?ve"),
    ]);
    const differ = (a: DecodedPng, b: DecodedPng) => a.packed.some((c, i) => c !== b.packed[i]);
    expect(differ(unicode, questions)).toBe(true);
    expect(differ(unicode, ascii)).toBe(true);
    expect(differ(questions, ascii)).toBe(true);
  });

  it("draws any numbers and names without failing", async () => {
    const number = fc.oneof(fc.double(), fc.constant(undefined));
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.string({ maxLength: 300 }), fc.string({ unit: "binary", maxLength: 100 })),
        fc.array(number, { minLength: 6, maxLength: 6 }),
        async (name, v) => {
          const r = (i: number): BenchResult => ({
            maxConcurrency: i === 0 ? 1 : 64,
            outputThroughput: v[i] ?? undefined,
            medianTtftMs: v[i + 1] ?? undefined,
            meanTpotMs: v[i + 2] ?? undefined,
            raw: {},
          });
          const chart = await renderBenchmarkChart(
            { single: r(0), loaded: r(3) },
            { model: name, engine: "sglang", single: r(3), loaded: r(0) },
            { ...about, model: name, host: name },
          );
          expect(chart.png.readUInt32BE(16)).toBe(720); // IHDR width
          expect(chart.altText.length).toBeLessThanOrEqual(1000);
        },
      ),
      { numRuns: 15 },
    );
  });

  it("leaves the event loop free while charts are drawn (the bot answers Slack meanwhile)", async () => {
    const pair = { single: result(1, 80, 300, 20), loaded: result(16, 600, 500, 30) };
    const previous = {
      model: "moonshotai/Kimi-K2-Thinking",
      engine: "sglang" as const,
      single: result(1, 40, 200, 25),
      loaded: result(16, 300, 700, 35),
    };
    await renderBenchmarkChart(pair, previous, about); // the renderer and its fonts are loaded
    // The CPU the event loop's own thread spent (Linux: /proc/self/task/<pid>/stat) against the CPU the
    // drawing took in the whole process (its thread pool too). CPU, not time: a loop's gaps and its
    // event-loop utilization also grow when a loaded machine does not schedule this process at all, and
    // the suite runs beside other files on two cores. Drawn on the event loop, its thread spends nearly all
    // of it (measured: about 100 %); on the thread pool, it only lays the SVG out and encodes the PNG (15–20 %).
    const processBefore = process.cpuUsage();
    const loopBefore = await mainThreadCpuMs();
    // eight swaps ending at once; drawn on the event loop, they held it for the whole time
    await Promise.all(Array.from({ length: 8 }, () => renderBenchmarkChart(pair, previous, about)));
    const loopMs = (await mainThreadCpuMs()) - loopBefore;
    const used = process.cpuUsage(processBefore);
    const processMs = (used.user + used.system) / 1000;
    expect(loopMs, `the event loop's thread used ${loopMs} of ${processMs} CPU ms`).toBeLessThan(
      processMs / 2,
    );
  });
});

/** CPU time of this process's main thread (the event loop's), from Linux's per-thread stat, in ms. */
async function mainThreadCpuMs(): Promise<number> {
  const stat = await readFile(`/proc/self/task/${process.pid}/stat`, "utf8");
  // the fields after the command name, which is in parentheses and may hold spaces: utime and stime are
  // the 14th and 15th fields of the line, in clock ticks (USER_HZ, 100 on Linux)
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
