import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * README.md's layout map ("How it is built") names every folder a reader will find: each top-level
 * folder of the project, and each folder of src/ and test/, with a line saying what is there; and it
 * names none that is gone.
 */
const ROOT = resolve(import.meta.dirname, "../..");
const readme = readFileSync(join(ROOT, "README.md"), "utf8");
const block = /## How it is built\s+```\n([\s\S]*?)\n```/.exec(readme)?.[1] ?? "";
const lines = block.split("\n");

const folders = (path: string) =>
  readdirSync(join(ROOT, path), { withFileTypes: true })
    .filter((e) => e.isDirectory() && !e.name.startsWith(".") && !["node_modules", "dist"].includes(e.name))
    .map((e) => e.name)
    .sort();

/** The folders the map names at the top level (`name/` at the start of a line). */
const topNamed = lines.map((l) => /^([a-z][\w-]*)\//.exec(l)?.[1]).filter((n) => n !== undefined);

/** The folders the map names inside `top/`: `name/` words on its indented lines, up to the next top entry. */
function namedInside(top: string): string[] {
  const start = lines.findIndex((l) => l.startsWith(`${top}/`));
  const end = lines.findIndex((l, i) => i > start && /^\S/.test(l));
  return lines
    .slice(start + 1, end < 0 ? undefined : end)
    .flatMap((l) => [...l.matchAll(/^ {2}((?:[a-z][\w-]*\/ ?)+)/g)].flatMap((m) => m[1]!.split(/\/ ?/)))
    .filter((n) => n !== "");
}

describe("README.md's layout map", () => {
  it("is found", () => {
    expect(lines.length).toBeGreaterThan(20);
  });

  it("names every top-level folder, and none that is gone", () => {
    expect([...new Set(topNamed)].sort()).toEqual(folders("."));
  });

  it.each(["src", "test"])("names every folder of %s/, and none that is gone", (top) => {
    expect([...new Set(namedInside(top))].sort()).toEqual(folders(top));
  });
});
