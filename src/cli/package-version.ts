import { readFileSync } from "node:fs";
import { packageFile } from "../package-file.ts";

/** modelswap's version, from its package.json (what `modelswap --version` prints). */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(packageFile("package.json"), "utf8")) as { version: string }).version;
}
