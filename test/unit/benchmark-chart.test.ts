import { execFileSync } from "node:child_process";
import { crc32 as zlibCrc32 } from "node:zlib";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { BenchResult } from "../../src/engine/bench-serving.ts";
import { COLOR, PALETTE } from "../../src/reporter/chart/bar-chart.ts";
import { renderBenchmarkChart } from "../../src/reporter/chart/benchmark-chart.ts";
import { fitText, glyph, textWidth } from "../../src/reporter/chart/bitmap-font.ts";
import { crc32, encodePng } from "../../src/reporter/chart/png-encode.ts";
import { countColor, type DecodedPng, decodePng, runsOf } from "../support/png-decode.ts";

describe("png-encode", () => {
  it("computes CRC-32 as zlib does", () => {
    expect(crc32(Buffer.from("123456789"))).toBe(0xcbf43926);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        expect(crc32(bytes)).toBe(zlibCrc32(bytes));
      }),
    );
  });

  it("writes palette and RGBA images that decode to the same pixels", () => {
    const size = fc.record({
      width: fc.integer({ min: 1, max: 40 }),
      height: fc.integer({ min: 1, max: 30 }),
    });
    fc.assert(
      fc.property(
        size.chain(({ width, height }) =>
          fc.record({
            width: fc.constant(width),
            height: fc.constant(height),
            palette: fc.array(fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255)), {
              minLength: 16,
              maxLength: 16,
            }),
            pixels: fc.uint8Array({ minLength: width * height, maxLength: width * height, max: 15 }),
          }),
        ),
        (image) => {
          const png = decodePng(encodePng({ kind: "indexed", ...image }));
          expect([png.width, png.height, png.colorType]).toEqual([image.width, image.height, 3]);
          expect(png.chunks).toEqual(["IHDR", "PLTE", "IDAT", "IEND"]);
          for (let y = 0; y < image.height; y++)
            for (let x = 0; x < image.width; x++)
              expect(png.rgb(x, y)).toEqual(image.palette[image.pixels[y * image.width + x]!]);
        },
      ),
      { numRuns: 30 },
    );
    fc.assert(
      fc.property(
        size.chain(({ width, height }) =>
          fc.record({
            width: fc.constant(width),
            height: fc.constant(height),
            pixels: fc.uint8Array({ minLength: width * height * 4, maxLength: width * height * 4 }),
          }),
        ),
        (image) => {
          const png = decodePng(encodePng({ kind: "rgba", ...image }));
          expect(png.colorType).toBe(6);
          const i = (image.height - 1) * image.width * 4;
          expect(png.rgb(0, image.height - 1)).toEqual([...image.pixels.subarray(i, i + 3)]);
        },
      ),
      { numRuns: 30 },
    );
  });

  it("is read by an independent implementation (Python's zlib and binascii)", () => {
    const png = encodePng({
      kind: "indexed",
      width: 3,
      height: 2,
      palette: [
        [0, 0, 0],
        [255, 0, 0],
      ],
      pixels: Uint8Array.from([0, 1, 0, 1, 0, 1]),
    });
    const script = [
      "import sys, zlib, binascii, struct",
      "b = sys.stdin.buffer.read()",
      "assert b[:8] == b'\\x89PNG\\r\\n\\x1a\\n'",
      "i, idat, out = 8, b'', []",
      "while i < len(b):",
      "  n, = struct.unpack('>I', b[i:i+4]); t = b[i+4:i+8]; d = b[i+8:i+8+n]",
      "  assert struct.unpack('>I', b[i+8+n:i+12+n])[0] == binascii.crc32(t + d), t",
      "  out.append(t.decode()); idat += d if t == b'IDAT' else b''; i += 12 + n",
      "w, h = struct.unpack('>II', b[16:24])",
      "raw = zlib.decompress(idat)",
      "print(','.join(out), w, h, raw.hex())",
    ].join("\n");
    const said = execFileSync("python3", ["-c", script], { input: png }).toString().trim();
    expect(said).toBe("IHDR,PLTE,IDAT,IEND 3 2 0000010000010001");
  });

  it("refuses sizes and pixels that do not make an image", () => {
    expect(() => encodePng({ kind: "rgba", width: 0, height: 1, pixels: new Uint8Array() })).toThrow(
      RangeError,
    );
    expect(() => encodePng({ kind: "rgba", width: 2, height: 1, pixels: new Uint8Array(4) })).toThrow(
      /need 8 bytes/,
    );
    expect(() =>
      encodePng({ kind: "indexed", width: 1, height: 1, palette: [[0, 0, 0]], pixels: Uint8Array.from([3]) }),
    ).toThrow(/not in the palette/);
  });
});

describe("bitmap-font", () => {
  it("has a glyph of 8 rows of 5 pixels for every printable ASCII character, and ? for others", () => {
    const unknown = glyph("\u2603");
    expect(unknown).toBe(glyph("?"));
    for (let code = 0x20; code <= 0x7e; code++) {
      const char = String.fromCharCode(code);
      const g = glyph(char);
      expect(g, char).toHaveLength(8);
      for (const row of g) expect(row, char).toHaveLength(5);
      if (char !== "?") expect(g, char).not.toBe(unknown);
      if (char !== " ") expect(g.flat().some(Boolean), char).toBe(true);
    }
    for (const char of "▲▼…–×→·±") expect(glyph(char)).not.toBe(unknown);
  });

  it("measures and cuts text to a width", () => {
    expect(textWidth("ab", 2)).toBe(22);
    expect(fitText("short", 100, 2)).toBe("short");
    const cut = fitText("a".repeat(200), 120, 2);
    expect(cut.endsWith("…")).toBe(true);
    expect(textWidth(cut, 2)).toBeLessThanOrEqual(120);
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
  it("draws the faster model's bar taller, lower latency in green and higher in red", () => {
    const chart = renderBenchmarkChart(
      { single: result(1, 80, 300, 20), loaded: result(16, 600, 500, 30) },
      {
        model: "moonshotai/Kimi-K2-Thinking",
        single: result(1, 40, 200, 25),
        loaded: result(16, 300, 700, 35),
      },
      about,
    );
    const png = decodePng(chart.png);
    expect([png.width, png.height]).toEqual([chart.width, chart.height]);
    expect(png.colorType).toBe(3);
    expect(chart.png.length).toBeLessThan(20_000);

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
    expect(chart.altText).toContain("vs moonshotai/Kimi-K2-Thinking");
  });

  it("shows the new model alone when there are no earlier numbers, and n/a for what is missing", () => {
    const chart = renderBenchmarkChart(
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

  it("draws any numbers and names without failing", () => {
    const number = fc.oneof(fc.double(), fc.constant(undefined));
    fc.assert(
      fc.property(
        fc.string({ maxLength: 300 }),
        fc.array(number, { minLength: 6, maxLength: 6 }),
        (name, v) => {
          const r = (i: number): BenchResult => ({
            maxConcurrency: i === 0 ? 1 : 64,
            outputThroughput: v[i] ?? undefined,
            medianTtftMs: v[i + 1] ?? undefined,
            meanTpotMs: v[i + 2] ?? undefined,
            raw: {},
          });
          const chart = renderBenchmarkChart(
            { single: r(0), loaded: r(3) },
            { model: name, single: r(3), loaded: r(0) },
            { ...about, model: name, host: name },
          );
          expect(chart.png.readUInt32BE(16)).toBe(720); // IHDR width
          expect(chart.altText.length).toBeLessThanOrEqual(1000);
        },
      ),
      { numRuns: 15 },
    );
  });
});
