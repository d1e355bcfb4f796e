#!/usr/bin/env node
// The `modelswap` command. It runs the build (dist/, from `npm run build`): plain JavaScript, no loader,
// only the runtime dependencies. MODELSWAP_FROM_SOURCE=1 runs the TypeScript sources through tsx instead
// (a dev dependency: the tests set it, so they never run a stale build); so does a checkout that has not
// been built yet, when tsx is installed.
import { existsSync } from "node:fs";

const built = new URL("../dist/src/cli.js", import.meta.url);
const fromSource = process.env.MODELSWAP_FROM_SOURCE === "1" || !existsSync(built);

if (!fromSource) {
  await import(built.href);
} else {
  let register;
  try {
    ({ register } = await import("tsx/esm/api"));
  } catch {
    const why =
      process.env.MODELSWAP_FROM_SOURCE === "1"
        ? "MODELSWAP_FROM_SOURCE=1 runs the sources through tsx, which is not installed (a dev dependency: npm ci)"
        : `${built.pathname} is missing: build it first with \`npm ci && npm run build\``;
    process.stderr.write(`modelswap: ${why}\n`);
    process.exit(1);
  }
  register();
  await import("../src/cli.ts");
}
