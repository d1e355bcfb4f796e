import { existsSync, readFileSync } from "node:fs";

/**
 * A file of the modelswap package (`package.json`, `manifest.yml`): found in the first directory above
 * this file whose package.json is modelswap's. This file sits in src/ of the sources or dist/src/ of the
 * build; both find the checkout's (or the image's /app) root.
 */
export function packageFile(name: string): URL {
  for (let dir = new URL("./", import.meta.url); ; dir = new URL("../", dir)) {
    const pkg = new URL("package.json", dir);
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, "utf8")) as { name?: string }).name === "modelswap")
      return new URL(name, dir);
    if (dir.pathname === "/") throw new Error("modelswap's package.json was not found");
  }
}
