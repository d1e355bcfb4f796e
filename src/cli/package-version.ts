import { existsSync, readFileSync } from "node:fs";

/**
 * modelswap's version, from its package.json (what `modelswap --version` prints): the first one above
 * this file, which sits in src/cli/ of the sources or dist/src/cli/ of the build.
 */
export function packageVersion(): string {
  for (let dir = new URL("./", import.meta.url); ; dir = new URL("../", dir)) {
    const file = new URL("package.json", dir);
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, "utf8")) as { name?: string; version: string };
      if (pkg.name === "modelswap") return pkg.version;
    }
    if (dir.pathname === "/") throw new Error("modelswap's package.json was not found");
  }
}
