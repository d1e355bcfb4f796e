import { fileURLToPath } from "node:url";

/**
 * The `modelswap` command the bench and the tests run as a child process: the suite's build of the
 * current sources when test/global-setup.ts made one (MODELSWAP_SUITE_BUILD: dist/ and bin/ as
 * `npm run build` lays them out, so a child runs the shipped form, plain JavaScript), else bin/modelswap.js
 * on the TypeScript sources through tsx (the demo and the bench, which have no global setup). A child on
 * the build starts in about half the CPU time of one on the sources (1.7 s against 3.0 s, measured
 * 2026-12-06), and the suite starts a few hundred of them.
 */
export function modelswapBin(): { path: string; env: { MODELSWAP_FROM_SOURCE: "0" | "1" } } {
  const build = process.env.MODELSWAP_SUITE_BUILD;
  if (build !== undefined && build !== "")
    return { path: `${build}/bin/modelswap.js`, env: { MODELSWAP_FROM_SOURCE: "0" } };
  return {
    path: fileURLToPath(new URL("../bin/modelswap.js", import.meta.url)),
    env: { MODELSWAP_FROM_SOURCE: "1" },
  };
}
