#!/usr/bin/env node
// The build's non-TypeScript files: what the code reads beside itself (the store's Lua, data files),
// copied from src/ into the build's src/ at the same paths. `npm run build` runs it after tsc:
//   node scripts/copy-assets.mjs [outDir]   (default dist)
import { copyFileSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const ASSETS = /\.(lua|ya?ml|json|ttf)$|^LICENSE-/;
const root = resolve(import.meta.dirname, "..");
const out = resolve(root, process.argv[2] ?? "dist");
let copied = 0;
const walk = (dir) => {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (ASSETS.test(name)) {
      const to = join(out, relative(root, path));
      mkdirSync(dirname(to), { recursive: true });
      copyFileSync(path, to);
      copied += 1;
    }
  }
};
walk(join(root, "src"));
console.log(`copy-assets: ${copied} file(s) into ${relative(root, out) || "."}`);
