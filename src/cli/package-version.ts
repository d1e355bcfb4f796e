import { readFileSync } from "node:fs";

/** modelswap's version, from its package.json (what `modelswap --version` prints). */
export function packageVersion(): string {
  const text = readFileSync(new URL("../../package.json", import.meta.url), "utf8");
  return (JSON.parse(text) as { version: string }).version;
}
