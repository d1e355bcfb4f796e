import { access } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { CodedError } from "../../errors.ts";

type RenderAsync = typeof import("@resvg/resvg-js").renderAsync;

/**
 * The two fonts the chart uses, shipped beside this file (DejaVu Sans 2.37, regular and bold, with its
 * licence, fonts/LICENSE-DejaVu): the same text on every machine, and 1.4 MB where the font package
 * installed 12 MB of faces the chart never draws.
 */
const FONT_FILES = ["DejaVuSans.ttf", "DejaVuSans-Bold.ttf"].map((name) =>
  fileURLToPath(new URL(`fonts/${name}`, import.meta.url)),
);

let loaded: Promise<{ renderAsync: RenderAsync; fontFiles: string[] }> | undefined;

/**
 * resvg's native binary comes from the npm package for this platform (an optional dependency of
 * @resvg/resvg-js, installed by npm ci for the machine it runs on). It is loaded on first use, so a
 * machine without one loses the chart, never the process.
 */
function renderer(): Promise<{ renderAsync: RenderAsync; fontFiles: string[] }> {
  loaded ??= (async () => {
    await Promise.all(FONT_FILES.map((file) => access(file)));
    const { renderAsync } = await import("@resvg/resvg-js");
    return { renderAsync, fontFiles: FONT_FILES };
  })().catch((error: unknown) => {
    loaded = undefined;
    throw new CodedError(
      "CHART_UNAVAILABLE",
      `the chart renderer could not be loaded on ${process.platform}-${process.arch}: ${(error as Error).message}`,
      "Run npm ci on the machine (or in the image) that runs modelswap, so npm installs @resvg/resvg-js's binary for its platform, and build with npm run build, which copies the chart's fonts beside it; the benchmark table is posted without the chart meanwhile.",
      { cause: error },
    );
  });
  return loaded;
}

/**
 * The SVG as a PNG, drawn by resvg with the shipped fonts only (no system fonts: the image may have
 * none, and a machine's own would change the output). Drawn on libuv's thread pool (renderAsync), not
 * on the event loop: a chart takes 200–450 ms of CPU (fonts parsed, the SVG laid out and rasterised), and
 * when several swaps ended at once the bot drawn synchronously could not answer Slack within its 3 s.
 */
export async function svgToPng(svg: string, fontFamily: string): Promise<Buffer> {
  const { renderAsync, fontFiles } = await renderer();
  const image = await renderAsync(svg, {
    font: { fontFiles, loadSystemFonts: false, defaultFontFamily: fontFamily },
    background: "white",
  });
  return image.asPng();
}
